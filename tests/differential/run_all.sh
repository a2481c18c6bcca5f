#!/usr/bin/env bash
# Every differential pair (tests/differential/pairs.py), full scale, with PowerSGD rank 4's
# aligned side also run with each difference left out, and docs/differential.md rewritten from
# the results:   tests/differential/run_all.sh [path/to/cedar]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cedar="${1:-$root/build/cedar}"
py="${CEDAR_PYTHON:-$HOME/.cache/cedar/venv/bin/python}"
exec "$py" "$root/tests/differential/run_pairs.py" --cedar "$cedar" --leave-one-out \
  --doc "$root/docs/differential.md" ${CEDAR_DIFFERENTIAL_RESULTS:+--results "$CEDAR_DIFFERENTIAL_RESULTS"}
