#!/usr/bin/env bash
# The main job: set-up (apt packages, LibTorch venv), build, then the quick suite on real data
# with 2 MPI ranks, ending in one result line per run. Extra arguments go to `cedar run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
RANKS="${CEDAR_RANKS:-2}"
DB="${CEDAR_DB:-results/quick.db}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "[demo] experiments/quick.yaml on $RANKS MPI ranks -> $DB"
mpirun --oversubscribe --bind-to none -np "$RANKS" build/cedar run experiments/quick.yaml --db "$DB" "$@"
