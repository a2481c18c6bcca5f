#!/usr/bin/env bash
# Does a profile calibrated in training's regime predict training's communication? On the virtual
# cluster at one rate, for 2 hosts x 1 rank (P = 2) and 2 hosts x 2 ranks (P = 4), in one session
# of the cluster per layout:
#   1. `cedar network calibrate --ops allreduce` over 64 KiB .. 32 MiB twice: with every timed loop
#      at least 3 calls back to back (--min-calls 3: as a step's bucket exchanges follow each
#      other; dense VGG-16 sends buckets of 25, 25 and 6.2 MiB) and, as the control, with
#      calibrate's default loops (about 20 ms: one call per loop from 1 MiB on at 100 and 300
#      Mbit/s, from 4 MiB on at 1 Gbit/s),
#      the medians of each kept (--timings);
#   2. REPS runs of dense SGD of experiments/network_validation.yaml (VGG-16, 12 steps, seeds
#      1..REPS) on the same links, into one database;
# then fits the back-to-back medians again over three ranges without timing the link again
# (`cedar network fit`: up to 4 MiB, up to 16 MiB, from 8 MiB on) and the control's from 8 MiB on,
# and sets each profile against the runs (`cedar network validate`), one table per fit:
# OUT/RATE-validate-<fit>.md, where <fit> is all (every size, back to back), small, upto16,
# large, single-large or single-all (the control's). Needs root, an otherwise idle machine and
# build/cedar; refused while a virtual cluster is up. About 22 minutes at 100mbit, 8 at 300mbit and 4 at 1gbit
# with REPS 3 on the 2-core machine.
# Usage: bench/calibration_regime.sh [OUT_DIR] [RATE] [REPS]  (defaults: results/calibration_regime
#        100mbit 3; CEDAR_BURST sets the tbf burst, default 256kb)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/calibration_regime}"
RATE="${2:-100mbit}"
REPS="${3:-3}"
BURST="${CEDAR_BURST:-256kb}"
CEDAR=build/cedar
SUITE=experiments/network_validation.yaml
SIZES=64KiB,1MiB,4MiB,8MiB,16MiB,25MiB,32MiB
[[ -x $CEDAR ]] || { echo "calibration_regime: no $CEDAR: run scripts/build.sh first" >&2; exit 4; }
source scripts/lib/virtual_cluster.sh
take_virtual_cluster calibration_regime
mkdir -p "$OUT"
# The suite's index of dense SGD at each P (in --dry-run's order).
dense_index() {
  $CEDAR suite "$SUITE" --dry-run --skip-preflight |
    awk -v p="$1" '$1 ~ /^[0-9]+$/ && $2 == "dense/np" p { print $1 }'
}
calibrate() {  # P BASE NAME OPTIONS...
  local P=$1 base=$2 name=$3
  shift 3
  echo "calibration_regime: $(date -u +%T) calibrating at P = $P ($name)"
  $CEDAR network calibrate --cluster virtual -np "$P" --world-sizes "$P" --ops allreduce \
    --sizes "$SIZES" --reps 3 --warmup 1 "$@" --timings "$base-timings.yaml" \
    --out "$base-all.yaml" --name "$name" > "$base-calibrate.log" 2>&1 ||
    { cat "$base-calibrate.log" >&2; exit 1; }
}
for layout in "2 1 2" "2 2 4"; do
  read -r H R P <<< "$layout"
  links="$RATE-${H}x$R"
  $CEDAR cluster up --hosts "$H" --ranks-per-host "$R" --bandwidth "$RATE" --burst "$BURST" > /dev/null
  calibrate "$P" "$OUT/$links" "vc-$links-all" --min-calls 3
  calibrate "$P" "$OUT/$links-single" "vc-$links-single-all"
  index=$(dense_index "$P")
  for ((seed = 1; seed <= REPS; ++seed)); do
    echo "calibration_regime: $(date -u +%T) dense SGD at P = $P, seed $seed"
    $CEDAR suite "$SUITE" --db "$OUT/$RATE.db" --only "$index" --quiet \
      --set network.cluster=virtual --set train.seed="$seed" < /dev/null >> "$OUT/$RATE-runs.log" 2>&1
  done
  $CEDAR cluster down > /dev/null
done
fit() {  # FIT TIMINGS-SUFFIX OPTION VALUE
  for links in 2x1 2x2; do
    $CEDAR network fit "$OUT/$RATE-$links$2-timings.yaml" --out "$OUT/$RATE-$links-$1.yaml" \
      --name "vc-$RATE-$links-$1" "$3" "$4" > "$OUT/$RATE-$links-$1-fit.log" 2>&1
  done
}
fit small "" --max-bytes 4MiB
fit upto16 "" --max-bytes 16MiB
fit large "" --min-bytes 8MiB
fit single-large -single --min-bytes 8MiB
for f in all small upto16 large single-large single-all; do
  $CEDAR network validate "$OUT/$RATE.db" --profiles "$OUT/$RATE-2x1-$f.yaml" \
    "$OUT/$RATE-2x2-$f.yaml" --suite network_validation --warmup 2 > "$OUT/$RATE-validate-$f.md"
  echo "calibration_regime: $f: $(grep -m1 -E "^(Over the|No run)" "$OUT/$RATE-validate-$f.md" || true)"
done
