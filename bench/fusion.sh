#!/usr/bin/env bash
# Measures tensor fusion from the network model (train.fusion) on VGG-16 with train.overlap
# (bench/fusion.yaml): fixed 25 MiB buckets, MG-WFBP's grouping, the model's optimal grouping and
# auto's bucket size, one after the other in this invocation. Prints per run its buckets, the
# model's predicted end of the last exchange, the median step time over the steps after the
# first, and that median's ratio to the fixed buckets' (below 1: faster). Dense SGD on 2 ranks sums
# each element once whatever the buckets, so every run's losses must equal the fixed run's.
# Usage: bench/fusion.sh [OUT_DIR] [--virtual RATE] [--steps N]
#   default: every collective slowed to its modeled time on 1 GbE (network.emulate)
#   --virtual RATE: on the virtual cluster (docs/cluster.md; root), 2 hosts x 1 rank on links of
#     RATE (e.g. 1gbit; CEDAR_BURST sets tbf's burst, default 256kb), brought up and down here,
#     with network.profile 1gbe as the model's profile
#   --steps N: training steps per run (default the file's 8; 3 for a smoke run)
# Expects build/cedar (bench/run.sh builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=results/bench
RATE=""
STEPS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --virtual) RATE="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    -*) echo "bench/fusion.sh: unknown option $1" >&2; exit 2 ;;
    *) OUT="$1"; shift ;;
  esac
done
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
DB="$OUT/fusion${RATE:+-$RATE}.db"
rm -f "$DB" "$DB"-*
SETS=()
[ -n "$STEPS" ] && SETS+=(--set "train.max_steps=$STEPS")
LINK="emulated 1gbe"
if [ -n "$RATE" ]; then
  # Refused while a cluster is up (another's): the script ends there, before it could take that
  # one down.
  build/cedar cluster up --hosts 2 --ranks-per-host 1 --bandwidth "$RATE" \
    --burst "${CEDAR_BURST:-256kb}" > /dev/null
  trap 'build/cedar cluster down > /dev/null 2>&1 || true' EXIT
  SETS+=(--set network.cluster=virtual --set network.emulate=false)
  LINK="virtual cluster, 2 hosts at $RATE"
fi
build/cedar suite bench/fusion.yaml --db "$DB" --quiet "${SETS[@]}" > "$OUT/fusion.log" 2>&1 || {
  tail -20 "$OUT/fusion.log" >&2
  exit 1
}
[ -n "$RATE" ] && build/cedar cluster down > /dev/null
median_step() {  # median of per-step wall time (wall_seconds differences), from step 1 on
  sqlite3 "$DB" "SELECT b.wall_seconds - a.wall_seconds FROM steps a JOIN steps b
                 ON b.run_id = a.run_id AND b.step = a.step + 1 JOIN runs r ON r.id = a.run_id
                 WHERE r.name = '$1' AND a.step >= 1 ORDER BY 1" |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
fusion() {  # a field of the run's provenance entry "fusion"
  sqlite3 "$DB" "SELECT COALESCE(json_extract(provenance, '\$.fusion.$2'), '') FROM runs WHERE name = '$1'"
}
differing() {  # steps whose loss differs from the fixed buckets' run
  sqlite3 "$DB" "SELECT COUNT(*) FROM steps a JOIN steps b ON a.step = b.step
                 JOIN runs ra ON ra.id = a.run_id JOIN runs rb ON rb.id = b.run_id
                 WHERE ra.name = 'size' AND rb.name = '$1' AND a.train_loss != b.train_loss"
}
base=$(median_step size)
{
  echo "VGG-16, 2 ranks x 1 thread, batch 16/rank, dense, train.overlap, $LINK"
  echo
  echo "| train.fusion | buckets | backward s (timed) | predicted last exchange end s | median step s | ratio to size | steps whose loss differs |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for run in size mgwfbp optimal auto; do
    t=$(median_step "$run")
    n=$(sqlite3 "$DB" "SELECT COALESCE(json_array_length(provenance, '\$.fusion.buckets'), '') FROM runs WHERE name = '$run'")
    [ "$run" = size ] && n="of 25 MiB"  # fixed buckets: no fusion entry in the provenance
    pred=$(fusion "$run" predicted_exchange_end_seconds)
    [ -n "$pred" ] && pred=$(printf '%.3f' "$pred") || pred="-"
    bwd=$(fusion "$run" backward_seconds)
    [ -n "$bwd" ] && bwd=$(printf '%.3f' "$bwd") || bwd="-"
    awk -v r="$run" -v n="$n" -v w="$bwd" -v p="$pred" -v t="$t" -v b="$base" -v d="$(differing "$run")" \
      'BEGIN { printf "| %s | %s | %s | %s | %.3f | %.2f | %s |\n", r, n, w, p, t, t / b, d }'
  done
  echo
  echo "Each run times backward itself, so its predictions use its own times (25 MiB buckets on"
  echo "mgwfbp's: $(printf '%.3f' "$(fusion mgwfbp size_predicted_exchange_end_seconds)") s); auto chose $(fusion auto bucket_mb) MiB."
} | tee "$OUT/fusion.md"
