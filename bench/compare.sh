#!/usr/bin/env bash
# Step time of Cedar against PyTorch on the same model, input and threads: CIFAR ResNet-20,
# 32 synthetic 3x32x32 images per rank, 2 ranks x 1 intra-op thread, on this machine.
#   cedar dense     vs  PyTorch DDP (gloo)
#   cedar powersgd  vs  PyTorch DDP + powerSGD_hook (rank 2, as cedar's default)
# Cedar's step times are the trainer's own per-step compute + communication seconds read from the
# results database (`cedar run` with train.max_steps); PyTorch's come from bench/ddp_step.py.
# Each side runs twice, in the order A B C C B A (cedar dense, PyTorch, cedar powersgd, then back),
# so that a drift of the machine's load does not favour either side; the medians are over the
# timed steps of both runs. Prints cedar/PyTorch ratios (<= 1: cedar is faster).
# Usage: bench/compare.sh [OUT_DIR]  (default results/bench; build/cedar must be built)
#        CEDAR_BENCH_WARMUP / CEDAR_BENCH_STEPS change the 3 warm-up and 12 timed steps per run.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
WARMUP="${CEDAR_BENCH_WARMUP:-3}"
STEPS="${CEDAR_BENCH_STEPS:-12}"
BATCH=32
PY="${CEDAR_VENV:-${CEDAR_HOME:-$HOME/.cache/cedar}/venv}/bin/python"
fail() { echo "compare.sh: $*" >&2; exit 2; }
[ -x build/cedar ] || fail "build/cedar is missing (run scripts/build.sh)"
[ -x "$PY" ] || fail "no Python with torch at $PY (run scripts/setup.sh)"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1   # one intra-op thread per rank on both sides
mkdir -p "$OUT"
rm -f "$OUT"/cedar_steps.db "$OUT"/cedar_steps.db-* "$OUT"/ddp-*.json

run_cedar() {
  mpirun -np 2 --oversubscribe --bind-to none \
    build/cedar run bench/resnet20_step.yaml --db "$OUT/cedar_steps.db" --quiet \
    --set algorithm.name="$1" --set train.batch_size=$BATCH --set train.threads=1 \
    --set train.max_steps=$((WARMUP + STEPS))
}
run_pytorch() {  # plain DDP, then DDP + powerSGD_hook
  "$PY" bench/ddp_step.py --ranks 2 --batch $BATCH --threads 1 --warmup "$WARMUP" \
    --steps "$STEPS" --out "$OUT/ddp-$1.json"
}

run_cedar dense
run_pytorch 1
run_cedar powersgd
run_cedar powersgd
run_pytorch 2
run_cedar dense
"$PY" bench/summarize.py compare "$OUT"
