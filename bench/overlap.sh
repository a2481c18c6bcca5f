#!/usr/bin/env bash
# Measures what overlapping the gradient exchange with backward gains on VGG-16 under an emulated
# 1 GbE network (bench/overlap.yaml): the same run with train.overlap false and true, 2 ranks,
# median step time over the steps after the first two, and their ratio. Both runs must produce
# identical losses (overlap changes when buckets are exchanged, not what is computed).
# Usage: bench/overlap.sh [OUT_DIR]   (expects build/cedar; bench/run.sh builds it)
# With CEDAR_OVERLAP_TRACE=FILE the overlapped run's ranks append, per step and bucket: step,
# bucket, elements, when its last gradient arrived, when its exchange started and ended, when
# backward ended and when the last exchange ended (seconds since backward started), to FILE.<pid>.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
DB="$OUT/overlap.db"
rm -f "$DB" "$DB"-*
for overlap in false true; do
  mpirun -np 2 --oversubscribe --bind-to none build/cedar run bench/overlap.yaml --db "$DB" --quiet \
    --set name="overlap-$overlap" --set train.overlap=$overlap
done
median_step() {  # median of per-step wall time (wall_seconds differences), steps >= 2
  sqlite3 "$DB" "SELECT b.wall_seconds - a.wall_seconds FROM steps a JOIN steps b
                 ON b.run_id = a.run_id AND b.step = a.step + 1 JOIN runs r ON r.id = a.run_id
                 WHERE r.name = '$1' AND a.step >= 1 ORDER BY 1" |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
field() { sqlite3 "$DB" "SELECT printf('%.3f', AVG($2)) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = '$1' AND s.step >= 2"; }
off=$(median_step overlap-false)
on=$(median_step overlap-true)
same=$(sqlite3 "$DB" "SELECT COUNT(*) FROM steps a JOIN steps b ON a.step = b.step
                      JOIN runs ra ON ra.id = a.run_id JOIN runs rb ON rb.id = b.run_id
                      WHERE ra.name = 'overlap-false' AND rb.name = 'overlap-true' AND a.train_loss != b.train_loss")
{
  echo "| VGG-16, 2 ranks x 1 thread, batch 16/rank, dense, emulated 1gbe | median step s | comm s/step | modeled comm s/step |"
  echo "|---|---:|---:|---:|"
  echo "| exchange after backward | $(printf '%.3f' "$off") | $(field overlap-false comm_seconds) | $(field overlap-false modeled_comm_seconds) |"
  echo "| overlapped with backward | $(printf '%.3f' "$on") | $(field overlap-true comm_seconds) | $(field overlap-true modeled_comm_seconds) |"
  echo
  modeled=$(field overlap-false modeled_comm_seconds)
  echo "overlap speed-up: $(awk -v a="$off" -v b="$on" 'BEGIN {printf "%.2fx", a / b}'); steps whose loss differs: $same"
  # The share of the modeled communication that overlap hides (target: at least 60%).
  awk -v a="$off" -v b="$on" -v m="$modeled" 'BEGIN {
    h = (a - b) / m; printf "hidden: (%.3f - %.3f) / %.3f = %.1f%% of the modeled communication, target >= 60%%: %s\n",
    a, b, m, 100 * h, (h >= 0.6 ? "met" : "MISSED") }'
} | tee "$OUT/overlap.md"
