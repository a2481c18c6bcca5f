#!/usr/bin/env bash
# Step time of Cedar against PyTorch on the same model, input and threads: CIFAR ResNet-20,
# 32 synthetic 3x32x32 images per rank, 2 ranks x 1 intra-op thread, on this machine.
#   cedar dense     vs  PyTorch DDP (gloo)
#   cedar powersgd  vs  PyTorch DDP + powerSGD_hook (rank 2, as cedar's default)
# Cedar's step times are the trainer's own per-step compute + communication seconds read from the
# results database (`cedar run` with train.max_steps); PyTorch's come from bench/ddp_step.py.
# Medians over the steps after the warm-up; prints cedar/PyTorch ratios (<= 1: cedar is faster).
# Usage: bench/compare.sh [OUT_DIR]  (default results/bench; build/cedar must be built)
#        CEDAR_BENCH_WARMUP / CEDAR_BENCH_STEPS change the 5 warm-up and 20 timed steps.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
WARMUP="${CEDAR_BENCH_WARMUP:-5}"
STEPS="${CEDAR_BENCH_STEPS:-20}"
BATCH=32
PY="${CEDAR_VENV:-${CEDAR_HOME:-$HOME/.cache/cedar}/venv}/bin/python"
[ -x build/cedar ] || { echo "compare.sh: build/cedar is missing (run scripts/build.sh)" >&2; exit 2; }
[ -x "$PY" ] || { echo "compare.sh: no Python with torch at $PY (run scripts/setup.sh)" >&2; exit 2; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1   # one intra-op thread per rank on both sides
mkdir -p "$OUT"
rm -f "$OUT"/cedar_steps.db "$OUT"/cedar_steps.db-*

run_cedar() {
  mpirun -np 2 --oversubscribe --bind-to none \
    build/cedar run bench/resnet20_step.yaml --db "$OUT/cedar_steps.db" --quiet \
    --set algorithm.name="$1" --set train.batch_size=$BATCH --set train.threads=1 \
    --set train.max_steps=$((WARMUP + STEPS))
}

# Interleaved so that a change of load on the machine does not favour one side.
run_cedar dense
"$PY" bench/ddp_step.py --ranks 2 --batch $BATCH --threads 1 --warmup "$WARMUP" \
  --steps "$STEPS" --out "$OUT/ddp.json"
run_cedar powersgd
"$PY" bench/summarize.py compare "$OUT"
