#!/usr/bin/env bash
# What the results store costs a training run: dense ResNet-20 (bench/resnet20_step.yaml: 32
# synthetic images per rank, 2 ranks x 1 thread), the same run with its step and evaluation rows
# written (as always) and without them (CEDAR_BENCH_NO_STEP_ROWS=1, a benchmark-only switch; the
# metering layer and progress stay in both). Runs in the order A B B A, REPS times; each run's
# training wall time comes from its record. Prints the medians and the overhead in percent, and
# the median of the overheads of each A B B A block (A's pair against B's pair, run back to back).
# The synthetic set is 32 steps an epoch on 2 ranks: epochs are set so that STEPS binds (32-step
# runs last about 5 s, and the machine's noise between runs, ±10%, hid a 1% target).
# Usage: bench/harness_overhead.sh [OUT_DIR]   (build/cedar must be built; REPS=3 STEPS=300:
# about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
REPS="${REPS:-3}"
STEPS="${STEPS:-300}"
mkdir -p "$OUT"
DB="$OUT/harness_overhead.db"
rm -f "$DB" "$DB"-*
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
run() {  # run NAME [VAR=VALUE]: one run, its record named NAME
  env ${2:+"$2"} mpirun -np 2 --oversubscribe --bind-to none build/cedar run \
    bench/resnet20_step.yaml --db "$DB" --quiet --set name="$1" --set train.max_steps="$STEPS" \
    --set train.epochs="$(((STEPS + 31) / 32))" \
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
# Per A B B A block, in run order: (the two with rows) / (the two without) - 1, in percent.
blocks=$(sqlite3 "$DB" "SELECT name, wall_seconds FROM runs WHERE status='completed' ORDER BY id" |
  awk -F'|' '{if ($1 == "with-rows") a += $2; else b += $2}
             NR % 4 == 0 {printf "%.2f\n", 100 * (a - b) / b; a = 0; b = 0}' | sort -g)
paired=$(echo "$blocks" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
{
  echo "| dense ResNet-20, $STEPS steps, 2 ranks x 1 thread, batch 32/rank | median training wall s | runs |"
  echo "|---|---:|---:|"
  echo "| step and evaluation rows written | $(printf '%.3f' "$with") | $((2 * REPS)) |"
  echo "| without rows (CEDAR_BENCH_NO_STEP_ROWS=1; $rows rows written) | $(printf '%.3f' "$without") | $((2 * REPS)) |"
  echo
  echo "results store overhead: $(awk -v a="$with" -v b="$without" 'BEGIN {printf "%.2f%%", 100 * (a - b) / b}') of the medians;" \
    "median of the A B B A blocks $(printf '%.2f' "$paired")% (blocks: $(echo $blocks)) (target <= 1%)"
} | tee "$OUT/harness_overhead.md"
