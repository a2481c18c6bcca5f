#!/usr/bin/env bash
# ctest: one differential pair at CI scale (4 images per rank per step).
#   pair_test.sh <cedar> <source root> <pair>
# Skipped (77) when Cedar's venv python with PyTorch or mpirun is missing.
set -uo pipefail
cedar="$1" root="$2" pair="$3"
py="${CEDAR_PYTHON:-$HOME/.cache/cedar/venv/bin/python}"
if [ ! -x "$py" ]; then
  echo "SKIP: no python at $py (Cedar's venv with PyTorch; set CEDAR_PYTHON)"
  exit 77
fi
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun is not installed"
  exit 77
fi
exec "$py" "$root/tests/differential/run_pairs.py" --cedar "$cedar" --pair "$pair" --batch-size 4
