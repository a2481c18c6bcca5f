#!/usr/bin/env bash
# One command for every benchmark: builds the bench targets, runs them with modest durations
# (about 5 minutes on 2 cores) and prints the measured ratios against the performance targets.
#   compressors_bench  compressor kernels vs a memory pass, DGC selection vs torch::topk (1 thread)
#   python_compressors.py  the same compressors in PyTorch ops (the reference researchers use)
#   script_bench.sh    the scripted top-k and QSGD of examples/ (algorithm script) vs the built-ins
#   comm_bench         allreduce / allgather busbw, the metered communicator vs raw MPI (2 ranks)
#   comm_bench --fit   the alpha-beta cost model fitted on raw MPI allreduce, predicting held-out
#                      allreduce sizes, allgather and broadcast (2 ranks; alpha_beta_fit.md)
#   step_bench         one training step per algorithm: compute / compression / communication
#                      (ResNet-20 at 32 images per rank, VGG-16 at 8; 2 ranks x 1 thread)
#   compare.sh         cedar dense / powersgd vs PyTorch DDP / DDP + powerSGD_hook (ResNet-20)
#   loader_bench       training images/s of the data loader: prefetch against none, lazy against
#                      eager ImageFolder decoding (medians of 5 and their ratios)
# Raw outputs and summary.md go to results/bench/ (CEDAR_BENCH_OUT overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${CEDAR_BENCH_OUT:-results/bench}"
PY="${CEDAR_VENV:-${CEDAR_HOME:-$HOME/.cache/cedar}/venv}/bin/python"

# Builds of this checkout are serialised through one lock (several may share build/).
CEDAR_TARGETS="compressors_bench script_bench comm_bench step_bench loader_bench cedar" \
  flock "${CEDAR_BUILD_LOCK:-/tmp/cedar-build.lock}" scripts/build.sh

mkdir -p "$OUT"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "version: $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)," \
    "$(getconf _NPROCESSORS_ONLN) cores"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/machine.txt"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
MPIRUN=(mpirun -np 2 --oversubscribe --bind-to none)

echo "[bench] compressors (1 thread; median of 3 repetitions)"
build/bench/compressors_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_min_time="${CEDAR_BENCH_MIN_TIME:-0.05}" \
  --benchmark_out="$OUT/compressors.json" --benchmark_out_format=json | tee "$OUT/compressors.txt"
# The targeted kernels again with LibTorch's allocator asking for transparent huge pages: at 15M
# and 25M elements every fresh output tensor is a new mapping whose 4 KiB pages fault one by one.
THP_MEM_ALLOC_ENABLE=1 build/bench/compressors_bench \
  --benchmark_filter='^(memory_pass|codec/(qsgd|sign)|reduce/terngrad)/' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_min_time="${CEDAR_BENCH_MIN_TIME:-0.05}" \
  --benchmark_out="$OUT/compressors_thp.json" --benchmark_out_format=json \
  > "$OUT/compressors_thp.txt"

echo "[bench] the compressors' PyTorch-ops references (1 thread, same tensors)"
"$PY" bench/python_compressors.py "$OUT/python_compressors.json" | tee "$OUT/python_compressors.txt"

echo "[bench] compressors written in Python (TorchScript) vs the built-ins (1 thread)"
CEDAR_PYTHON="$PY" bench/script_bench.sh --benchmark_out="$OUT/script.json" \
  --benchmark_out_format=json | tee "$OUT/script.txt"

echo "[bench] communicator vs raw MPI (2 ranks)"
"${MPIRUN[@]}" build/bench/comm_bench --csv "$OUT/comm.csv" | tee "$OUT/comm.txt"

echo "[bench] alpha-beta model: fit on allreduce, predict allgather / broadcast (2 ranks)"
"${MPIRUN[@]}" build/bench/comm_bench --fit --reps 3 --csv "$OUT/alpha_beta_fit.csv" \
  | tee "$OUT/alpha_beta_fit.md"

echo "[bench] one training step per algorithm (2 ranks x 1 thread)"
"${MPIRUN[@]}" build/bench/step_bench --model resnet20 --batch 32 --warmup 2 --steps 6 \
  --csv "$OUT/step_resnet20.csv" | tee "$OUT/step_resnet20.txt"
"${MPIRUN[@]}" build/bench/step_bench --model vgg16 --batch 8 --warmup 1 --steps 3 \
  --algorithms 'all,powersgd{batch_same_shape: true}' --csv "$OUT/step_vgg16.csv" | tee "$OUT/step_vgg16.txt"

echo "[bench] cedar vs PyTorch DDP (ResNet-20, 2 ranks x 1 thread)"
bench/compare.sh "$OUT" | tee "$OUT/compare.txt"

echo "[bench] data loader: prefetch and lazy ImageFolder decoding (medians of 5)"
build/bench/loader_bench --benchmark_min_time="${CEDAR_BENCH_MIN_TIME:-0.05}" \
  --benchmark_out="$OUT/loader.json" --benchmark_out_format=json | tee "$OUT/loader.txt"

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
echo
cat "$OUT/machine.txt"
echo
"$PY" bench/summarize.py summary "$OUT"
echo "[bench] raw outputs and summary.md in $OUT/"
