#!/usr/bin/env bash
# What the results store costs a training run: dense ResNet-20 (bench/resnet20_step.yaml: 32
# synthetic images per rank, 2 ranks x 1 thread), the same run with its step and evaluation rows
# written (as always) and without them (CEDAR_BENCH_NO_STEP_ROWS=1, a benchmark-only switch; the
# metering layer and progress stay in both). Runs in the order A B B A, REPS times; each run's
# training wall time comes from its record. Prints the medians and the overhead in percent.
# Usage: bench/harness_overhead.sh [OUT_DIR]   (build/cedar must be built; REPS=2 STEPS=60)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
REPS="${REPS:-2}"
STEPS="${STEPS:-60}"
mkdir -p "$OUT"
DB="$OUT/harness_overhead.db"
rm -f "$DB" "$DB"-*
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
run() {  # run NAME [VAR=VALUE]: one run, its record named NAME
  env ${2:+"$2"} mpirun -np 2 --oversubscribe --bind-to none build/cedar run \
    bench/resnet20_step.yaml --db "$DB" --quiet --set name="$1" --set train.max_steps="$STEPS" \
    --set train.checkpoint=false > /dev/null
}
for ((i = 0; i < REPS; ++i)); do
  run with-rows; run without-rows CEDAR_BENCH_NO_STEP_ROWS=1
  run without-rows CEDAR_BENCH_NO_STEP_ROWS=1; run with-rows
done
median() {
  sqlite3 "$DB" "SELECT wall_seconds FROM runs WHERE name='$1' AND status='completed' ORDER BY 1" |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
with=$(median with-rows)
without=$(median without-rows)
rows=$(sqlite3 "$DB" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'without-rows'")
{
  echo "| dense ResNet-20, $STEPS steps, 2 ranks x 1 thread, batch 32/rank | median training wall s | runs |"
  echo "|---|---:|---:|"
  echo "| step and evaluation rows written | $(printf '%.3f' "$with") | $((2 * REPS)) |"
  echo "| without rows (CEDAR_BENCH_NO_STEP_ROWS=1; $rows rows written) | $(printf '%.3f' "$without") | $((2 * REPS)) |"
  echo
  echo "results store overhead: $(awk -v a="$with" -v b="$without" 'BEGIN {printf "%.2f%%", 100 * (a - b) / b}') (target <= 1%)"
} | tee "$OUT/harness_overhead.md"
