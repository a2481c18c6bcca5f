#!/usr/bin/env bash
# Measures what docs/scheduling.md reports, then writes it: experiments/scheduling.yaml's runs on
# the virtual cluster (docs/cluster.md), as root, on an otherwise idle machine (step seconds are
# the measurement). For each rate: `cedar cluster up --hosts 2 --ranks-per-host 2 --bandwidth
# RATE`, the suite's runs whose label ends in "-RATE" into one database, `cedar cluster down`.
# Then every run's recorded links are checked against its label (a run measured at another rate
# than it says is an error), and `cedar report` writes the document with its claims, its plots,
# the results dump beside it and docs/scheduling_findings.md when that file exists.
# Usage: scripts/scheduling.sh [DB]   (default results/scheduling.db; CEDAR_BURST, default 256kb)
# Runs completed in DB earlier are skipped (`cedar suite`), so the measurement can span sessions.
set -euo pipefail
cd "$(dirname "$0")/.."
CEDAR=build/cedar
SUITE=experiments/scheduling.yaml
DB="${1:-results/scheduling.db}"
BURST="${CEDAR_BURST:-256kb}"
RATES=(300mbit 1gbit)
[[ -x $CEDAR ]] || { echo "scheduling: no $CEDAR: run scripts/build.sh first" >&2; exit 4; }
source scripts/lib/virtual_cluster.sh
take_virtual_cluster scheduling
mkdir -p "$(dirname "$DB")"
LOG="${DB%.db}-runs.log"
failed=()
for rate in "${RATES[@]}"; do
  $CEDAR cluster up --hosts 2 --ranks-per-host 2 --bandwidth "$rate" --burst "$BURST" > /dev/null
  mapfile -t runs < <($CEDAR suite "$SUITE" --dry-run --skip-preflight --set network.cluster=virtual |
    awk -v rate="$rate" '$1 ~ /^[0-9]+$/ && $3 == "ranks" && $2 ~ ("-" rate "$") {print $1, $2}')
  for line in "${runs[@]}"; do
    read -r index name <<< "$line"
    if ! $CEDAR suite "$SUITE" --db "$DB" --only "$index" --quiet --set network.cluster=virtual \
      < /dev/null >> "$LOG" 2>&1; then
      failed+=("$name (run $index)")  # mpirun reads stdin: hence < /dev/null
    fi
  done
  $CEDAR cluster down > /dev/null
  echo "scheduling: $rate measured ($((SECONDS / 60)) min so far)"
done
((${#failed[@]} == 0)) || printf 'scheduling: failed (see %s): %s\n' "$LOG" "${failed[*]}" >&2
# Each run's label names the rate its links had.
wrong=$(sqlite3 "$DB" "SELECT name || ' at ' || json_extract(provenance, '$.links.rate') FROM runs
  WHERE suite = 'scheduling' AND status = 'completed'
    AND name NOT LIKE '%-' || json_extract(provenance, '$.links.rate')")
[[ -z $wrong ]] || { echo "scheduling: runs measured at another rate than their label: $wrong" >&2; exit 1; }
findings=()
[[ -f docs/scheduling_findings.md ]] && findings=(--findings docs/scheduling_findings.md)
$CEDAR report "$DB" --suite scheduling --claims "$SUITE" --document docs/scheduling.md "${findings[@]}"
