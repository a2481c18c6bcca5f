#!/usr/bin/env bash
# Compares train.schedule fifo and priority (P3 / ByteScheduler slices, runner/train/
# exchange_schedule.h) on VGG-16 with train.overlap (bench/priority.yaml) between 2 hosts x 1 rank
# of the virtual cluster at RATE: median step time of the steps after step 1 (warm-up), the fifo /
# priority ratio, the negotiation rounds and control bytes per step, and whether the two runs'
# losses are identical (on 2 ranks every element's sum is the same whatever the slicing). Needs
# root; brings a cluster up and down, and refuses (exit 4) while another one is up rather than
# take it down.
# What it measures: the step ends when the last slice is exchanged (there is no layer-by-layer
# start of the next forward pass here), so priority can only gain from slices leaving as soon as
# their own gradients are in instead of waiting for their whole bucket; its costs are the rounds
# of negotiation (one small allgather each) and more, smaller messages.
# Usage: bench/priority.sh [OUT_DIR] [RATE]   (default RATE 1gbit; CEDAR_BENCH_STEPS, default 8;
#        CEDAR_BURST, default 256kb; expects build/cedar)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
RATE="${2:-1gbit}"
STEPS="${CEDAR_BENCH_STEPS:-8}"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
DB="$OUT/priority-$RATE.db"
rm -f "$DB" "$DB"-*
if ! build/cedar cluster up --hosts 2 --ranks-per-host 1 --bandwidth "$RATE" \
    --burst "${CEDAR_BURST:-256kb}" > "$OUT/priority-cluster.log" 2>&1; then
  cat "$OUT/priority-cluster.log" >&2
  echo "bench/priority.sh: no virtual cluster of our own (see above); nothing measured" >&2
  exit 4
fi
trap 'build/cedar cluster down > /dev/null 2>&1 || true' EXIT
build/cedar suite bench/priority.yaml --db "$DB" --quiet --set train.max_steps="$STEPS" \
  > "$OUT/priority-$RATE.log" 2>&1 || { tail -20 "$OUT/priority-$RATE.log" >&2; exit 1; }
median_step() {  # median of per-step wall time (wall_seconds differences), after step 1
  sqlite3 "$DB" "SELECT b.wall_seconds - a.wall_seconds FROM steps a JOIN steps b
                 ON b.run_id = a.run_id AND b.step = a.step + 1 JOIN runs r ON r.id = a.run_id
                 WHERE r.name LIKE '$1%' AND a.step >= 1 ORDER BY 1" |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
per_step() { sqlite3 "$DB" "SELECT printf('%.1f', AVG($2)) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name LIKE '$1%'"; }
stat() { sqlite3 "$DB" "SELECT printf('%.1f', AVG(value)) FROM step_stats s JOIN runs r ON r.id = s.run_id WHERE r.name LIKE 'priority%' AND key = '$1'"; }
fifo=$(median_step fifo)
prio=$(median_step priority)
differ=$(sqlite3 "$DB" "SELECT COUNT(*) FROM steps a JOIN steps b ON a.step = b.step
                        JOIN runs ra ON ra.id = a.run_id JOIN runs rb ON rb.id = b.run_id
                        WHERE ra.name LIKE 'fifo%' AND rb.name LIKE 'priority%' AND a.train_loss != b.train_loss")
{
  echo "| VGG-16, 2 hosts x 1 rank (virtual cluster, $RATE), batch 16/rank, dense, overlap, $STEPS steps | median step s | payload MB/step |"
  echo "|---|---:|---:|"
  echo "| fifo: 25 MiB buckets in backward's order | $(printf '%.3f' "$fifo") | $(per_step fifo 'payload_bytes / 1e6') |"
  echo "| priority: 4000 kB slices, first layers first | $(printf '%.3f' "$prio") | $(per_step priority 'payload_bytes / 1e6') |"
  echo
  echo "fifo / priority: $(awk -v a="$fifo" -v b="$prio" 'BEGIN {printf "%.3f", a / b}');" \
    "priority: $(stat schedule_slices) slices, $(stat schedule_rounds) rounds per step" \
    "($(stat schedule_rounds_without_slice) without a slice), control bytes per rank and step" \
    "$(awk -v r="$(stat schedule_rounds)" -v n="$(stat schedule_slices)" 'BEGIN {printf "%.0f", r * int((n + 7) / 8)}');" \
    "steps whose loss differs: $differ"
} | tee "$OUT/priority-$RATE.md"
