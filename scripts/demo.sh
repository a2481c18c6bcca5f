#!/usr/bin/env bash
# The main job: set-up (apt packages, LibTorch venv), build, then the quick suite on real data
# (every algorithm, 2 MPI ranks each), ending in the comparison table. Extra arguments go to
# `cedar suite` (e.g. --set train.epochs=2). Runs already completed in the database are skipped.
# Only the cedar executable is built (the tests and benchmarks are not needed here); a later
# scripts/test.sh in the same build folder builds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
CEDAR_TARGETS="${CEDAR_TARGETS:-cedar}" scripts/build.sh
DB="${CEDAR_DB:-results/quick.db}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "[demo] experiments/quick.yaml -> $DB"
build/cedar suite experiments/quick.yaml --db "$DB" --quiet "$@"
PLOTS="${DB%.db}-plots"
build/cedar report "$DB" --suite quick --plots "$PLOTS" > /dev/null
echo "[demo] plots (accuracy vs time / payload bytes / wire bytes / epoch, training loss): $PLOTS/*.svg, *.png"
