#!/usr/bin/env bash
# Measures the ceiling of the virtual cluster's links (veth + tbf, `cedar cluster up`): for each
# rate, dense SGD on 2 hosts x 1 rank (bench/cluster_links.yaml) and, per step after the first
# two, the seconds inside the communicator against a ring allreduce at the nominal rate,
# bus bytes x 8 / rate. Prints one row per rate: bus MB per step, measured and ring seconds
# (medians), their ratio and the rate the allreduce achieved. Needs root; brings a cluster up
# and down for each rate (refused while one is already up).
# Usage: bench/cluster_links.sh [OUT_DIR] [RATE...]   (default rates: 100mbit 300mbit 1gbit;
#        CEDAR_BURST sets the tbf burst, default 256kb; expects build/cedar)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
shift || true
RATES=("${@:-100mbit 300mbit 1gbit}")
read -r -a RATES <<< "${RATES[*]}"
BURST="${CEDAR_BURST:-256kb}"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
median() { awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
bits() { awk -v r="$1" 'BEGIN { n = r + 0; u = r; sub(/^[0-9.]+/, "", u);
  print n * (u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : 1) }'; }
printf "| rate | burst | bus MB/step | measured s | ring s at rate | measured / ring | achieved Mbit/s |\n"
printf "|---|---|---:|---:|---:|---:|---:|\n"
for rate in "${RATES[@]}"; do
  DB="$OUT/cluster_links-$rate.db"  # one database per rate: a run's fingerprint holds no rate
  rm -f "$DB" "$DB"-*
  build/cedar cluster up --hosts 2 --ranks-per-host 1 --bandwidth "$rate" --burst "$BURST" > /dev/null
  # Only a cluster this script brought up is taken down on the way out (an `up` refused because
  # another is up leaves that one alone).
  trap 'build/cedar cluster down > /dev/null 2>&1 || true' EXIT
  build/cedar suite bench/cluster_links.yaml --db "$DB" --quiet > "$OUT/cluster_links-$rate.log" 2>&1
  build/cedar cluster down > /dev/null
  trap - EXIT
  bus=$(sqlite3 "$DB" "SELECT MAX(bus_bytes) FROM steps")
  comm=$(sqlite3 "$DB" "SELECT comm_seconds FROM steps WHERE step >= 2 ORDER BY 1" | median)
  awk -v rate="$rate" -v burst="$BURST" -v bus="$bus" -v t="$comm" -v bps="$(bits "$rate")" 'BEGIN {
    ring = bus * 8 / bps
    printf "| %s | %s | %.2f | %.3f | %.3f | %.2f | %.0f |\n", rate, burst, bus / 1e6, t, ring, t / ring, bus * 8 / t / 1e6 }'
done
