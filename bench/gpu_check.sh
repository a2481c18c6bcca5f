#!/usr/bin/env bash
# The GPU check, sized for a short window on a GPU machine: the unit tests (gpu_test exercises
# NCCL and every algorithm on CUDA tensors; the others run as on the CPU), one short `cedar run`
# per algorithm on device cuda, and the compressor benchmarks; a summary goes to OUT/summary.md.
#
#   bench/gpu_check.sh [OUT]
#       builds into build-gpu/ against the LibTorch of this machine's python3 torch
#       (python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'), then runs the checks.
#       Needs the project's Debian packages (scripts/setup.sh lists them).
#   bench/gpu_check.sh --prebuilt BUILD_DIR LIB_DIR [OUT]
#       runs binaries built elsewhere against the same torch release (e.g. a CPU machine with the
#       cu130 wheel), loading LibTorch, CUDA and NCCL from this machine's python3 torch and the
#       other shared libraries from LIB_DIR: for GPU machines without the project's packages.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${CEDAR_GPU_PYTHON:-python3}"
if [ "${1:-}" = "--prebuilt" ]; then
  BUILD="$2"; LIBS="$(cd "$3" && pwd)"; OUT="${4:-results/gpu}"
  SITE=$("$PY" -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
  LD=$(ls -d "$SITE"/torch/lib "$SITE"/nvidia/*/lib /usr/local/cuda/lib64 2>/dev/null | tr '\n' ':')
  export LD_LIBRARY_PATH="$LD$LIBS:${LD_LIBRARY_PATH:-}"
else
  OUT="${1:-results/gpu}"; BUILD=build-gpu
  CEDAR_BUILD_DIR="$BUILD" CEDAR_CMAKE_ARGS="-DCEDAR_PYTHON=$(command -v "$PY")" scripts/build.sh || exit 1
fi
mkdir -p "$OUT"
SUMMARY="$OUT/summary.md"
{
  echo "# GPU check ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1
  echo '```'
} > "$SUMMARY"

echo "## Unit tests" >> "$SUMMARY"
echo >> "$SUMMARY"
for t in gpu_test checkpoint_test comm_test models_test optimizer_test algorithms_test lars_test; do
  [ -x "$BUILD/tests/$t" ] || { echo "- $t: not built" >> "$SUMMARY"; continue; }
  start=$(date +%s.%N)
  timeout 300 "$BUILD/tests/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1; rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  line=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/$t.log" | tr '\n' ' ')
  echo "- $t: exit $rc in $secs s; $line" >> "$SUMMARY"
done
# The GPU tests on two MPI ranks sharing the GPUs (MPI with CUDA tensors; NCCL with two GPUs).
if [ -x "$BUILD/tests/gpu_test" ]; then
  timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$BUILD/tests/gpu_test" \
    --gtest_filter='*GpuMpi*' --gtest_brief=1 > "$OUT/gpu_mpi_test.log" 2>&1; rc=$?
  line=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu_mpi_test.log" | sort -u | tr '\n' ' ')
  echo "- gpu_test on 2 MPI ranks (GpuMpi): exit $rc; $line" >> "$SUMMARY"
fi
grep -E '^\[  FAILED  \]' "$OUT"/*_test.log | head -20 | sed 's/^/    /' >> "$SUMMARY"

echo >> "$SUMMARY"
echo "## One short run per algorithm on device cuda (ResNet-20, batch 128, 12 steps)" >> "$SUMMARY"
echo >> "$SUMMARY"
DB="$OUT/gpu.db"
rm -f "$DB" "$DB"-*
for alg in dense dgc topk randomk qsgd terngrad signsgd ef-signsgd fp16 powersgd local-sgd lag; do
  timeout 300 "$BUILD/cedar" run bench/gpu_run.yaml --db "$DB" --quiet --set name="gpu-$alg" \
    --set algorithm.name=$alg >> "$OUT/runs.log" 2>&1
  echo "- $alg: exit $?" >> "$SUMMARY"
done
# Two ranks on the GPUs with MPI carrying CUDA tensors (they share a GPU on a one-GPU machine).
for alg in dense powersgd; do
  timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$BUILD/cedar" run \
    bench/gpu_run.yaml --db "$DB" --quiet --set name="gpu-mpi2-$alg" --set train.backend=mpi \
    --set algorithm.name=$alg >> "$OUT/runs.log" 2>&1
  echo "- $alg on 2 ranks, train.backend mpi: exit $?" >> "$SUMMARY"
done
if command -v sqlite3 > /dev/null; then
  sqlite3 -header -markdown "$DB" "SELECT r.name, r.status, r.backend, printf('%.1f', 1000 * AVG(s.compute_seconds)) AS compute_ms,
      printf('%.3f', AVG(s.payload_bytes) / 1e6) AS sent_mb, COALESCE(r.error, '') AS error
      FROM runs r LEFT JOIN steps s ON s.run_id = r.id AND s.step >= 2 GROUP BY r.id" >> "$SUMMARY"
else
  "$PY" - "$DB" >> "$SUMMARY" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("| run | status | backend | compute ms/step | error |\n|---|---|---|---:|---|")
for row in db.execute("""SELECT r.name, r.status, r.backend, 1000 * AVG(s.compute_seconds), COALESCE(r.error, '')
                         FROM runs r LEFT JOIN steps s ON s.run_id = r.id AND s.step >= 2 GROUP BY r.id"""):
    print("| %s | %s | %s | %.1f | %s |" % (row[0], row[1], row[2], row[3] or 0, row[4][:160]))
PYEOF
fi

if [ -x "$BUILD/bench/compressors_bench" ]; then
  echo >> "$SUMMARY"
  echo "## Compressor benchmarks (CPU kernels of this machine)" >> "$SUMMARY"
  timeout 240 "$BUILD/bench/compressors_bench" --benchmark_min_time=0.05 \
    --benchmark_out="$OUT/compressors.json" --benchmark_out_format=json > "$OUT/compressors.txt" 2>&1
  echo "exit $?; see compressors.txt" >> "$SUMMARY"
fi
cat "$SUMMARY"
