#!/usr/bin/env bash
# Compressors written in Python against the built-ins (bench/script_bench.cpp): exports
# examples/script_topk.py and examples/script_qsgd.py with Cedar's venv Python, then runs
# build/bench/script_bench with repetitions and prints the medians and their ratios.
#   bench/script_bench.sh [extra Google Benchmark flags]
# CEDAR_BENCH_REPS (default 5) repetitions, CEDAR_BENCH_MIN_TIME (default 0.2) seconds each.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${CEDAR_PYTHON:-${CEDAR_VENV:-${CEDAR_HOME:-$HOME/.cache/cedar}/venv}/bin/python}"
[ -x "$PY" ] || { echo "script_bench.sh: no Python with torch at $PY (run scripts/setup.sh)" >&2; exit 2; }
[ -x build/bench/script_bench ] || { echo "script_bench.sh: build/bench/script_bench is missing (run scripts/build.sh)" >&2; exit 2; }
dir=$(mktemp -d /tmp/cedar-script-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for name in topk qsgd; do "$PY" "examples/script_$name.py" "$dir/script_$name.pt" 2>/dev/null; done
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
CEDAR_SCRIPT_DIR="$dir" build/bench/script_bench \
  --benchmark_repetitions="${CEDAR_BENCH_REPS:-5}" --benchmark_report_aggregates_only=true \
  --benchmark_min_time="${CEDAR_BENCH_MIN_TIME:-0.2}" "$@"
