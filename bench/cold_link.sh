#!/usr/bin/env bash
# Where training's allreduce loses rate on the virtual cluster: the same shaped links (2 hosts x 1
# rank) measured three ways, under each TCP setting of net.ipv4.tcp_slow_start_after_idle (1, the
# kernel's default: a connection idle for more than its retransmission timeout restarts from its
# initial congestion window; 0: it keeps its window):
#   warm   allreduce calls back to back         (cedar network calibrate --ops allreduce)
#   cold   each allreduce after IDLE_MS quiet   (the same with --idle-ms IDLE_MS)
#   train  dense SGD's steps                    (bench/cluster_links.yaml: VGG-11, 36.9 MB of
#                                                allreduce bus bytes per step, small compute)
# For warm and cold the rate is the measured median call of the largest size (32 MiB: its bus
# bytes over its seconds, as calibrate prints it); for train, the median over steps 2-5 of bus
# bytes / seconds in the communicator. Each row also gives the
# packets the tbf qdiscs dropped during that measurement (both hosts, both directions).
# Needs root; brings a cluster up and down per TCP setting (refused while one is up).
# Usage: bench/cold_link.sh [OUT_DIR] [RATE] [IDLE_MS]   (defaults: results/bench 100mbit 1000;
#        CEDAR_BURST sets the tbf burst, default 256kb; expects build/cedar)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
RATE="${2:-100mbit}"
IDLE_MS="${3:-1000}"
BURST="${CEDAR_BURST:-256kb}"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SIZES=1MiB,8MiB,32MiB
median() { awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
VETH=cedar-v  # runner/suite/cluster_state.h: kClusterVethPrefix
hosts() { ip netns list | awk '/^cedar-h[0-9]+/ {print $1}'; }
# Packets dropped so far by every qdisc of the cluster: each host's eth0 and the bridge-side veths.
drops() {
  { for h in $(hosts); do ip netns exec "$h" tc -s qdisc show dev eth0; done
    for v in $(ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep "^$VETH"); do
      tc -s qdisc show dev "$v"
    done; } |
    awk '/dropped/ { for (i = 1; i < NF; ++i) if ($i == "(dropped") { gsub(",", "", $(i + 1)); s += $(i + 1) } }
         END { print s + 0 }'
}
# The measured rate of the largest allreduce at P = 2 in Mbit/s, from calibrate's table of medians.
measured_rate() { awk -F'|' '$2 == " allreduce " && $3 + 0 == 2 && $4 + 0 == 33554432 { printf "%.0f", $7 }' "$1"; }

printf "| tcp_slow_start_after_idle | measurement | achieved Mbit/s | tbf drops |\n|---|---|---:|---:|\n"
for ssai in 1 0; do
  build/cedar cluster up --hosts 2 --ranks-per-host 1 --bandwidth "$RATE" --burst "$BURST" > /dev/null
  trap 'build/cedar cluster down > /dev/null 2>&1 || true' EXIT
  for h in $(hosts); do ip netns exec "$h" sysctl -q -w net.ipv4.tcp_slow_start_after_idle="$ssai"; done
  for mode in warm cold; do
    extra=()
    [ "$mode" = cold ] && extra=(--idle-ms "$IDLE_MS")
    profile="$OUT/cold_link-$RATE-ssai$ssai-$mode.yaml"
    d0=$(drops)
    build/cedar network calibrate --cluster virtual -np 2 --out "$profile" --name "$mode" \
      --ops allreduce --sizes "$SIZES" --reps 5 --warmup 1 "${extra[@]}" \
      > "$OUT/cold_link-$RATE-ssai$ssai-$mode.log" 2>&1
    printf "| %s | %s | %s | %s |\n" "$ssai" "allreduce $mode${extra:+ ($IDLE_MS ms idle)}" \
      "$(measured_rate "$OUT/cold_link-$RATE-ssai$ssai-$mode.log")" "$(($(drops) - d0))"
  done
  DB="$OUT/cold_link-$RATE-ssai$ssai.db"
  rm -f "$DB" "$DB"-*
  d0=$(drops)
  build/cedar suite bench/cluster_links.yaml --db "$DB" --quiet > "$OUT/cold_link-$RATE-ssai$ssai-train.log" 2>&1
  dropped=$(($(drops) - d0))
  build/cedar cluster down > /dev/null
  trap - EXIT
  rate=$(sqlite3 "$DB" "SELECT bus_bytes * 8 / comm_seconds / 1e6 FROM steps WHERE step >= 2 ORDER BY 1" | median)
  printf "| %s | dense SGD steps (VGG-11) | %.0f | %s |\n" "$ssai" "$rate" "$dropped"
done
