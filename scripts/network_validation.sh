#!/usr/bin/env bash
# Measures what docs/network_validation.md compares, then writes it: the α–β model against
# seconds measured on the virtual cluster's shaped links (docs/cluster.md). As root, on an
# otherwise idle machine (the seconds measured are the point):
#   1. bench/cluster_links.sh: the links' ceiling at each rate (dense VGG-11 on 2 hosts x 1 rank),
#      kept as <out>/cluster_links.md;
#   2. for each rate, for each set of links (2 hosts x 1 rank for the runs at P = 2, 2 hosts x 2
#      ranks for P = 4): `cedar cluster up`, `cedar network calibrate --cluster virtual` into
#      <out>/<rate>-<H>x<R>.yaml, the runs of experiments/network_validation.yaml at that P into
#      <out>/<rate>.db (one database per rate: a run's fingerprint holds network.cluster, not the
#      rate), `cedar cluster down`;
#   3. `cedar network validate` on the databases and profiles, writing the document, the
#      databases' dumps and the profiles beside it (docs/network_validation-data/, from which
#      `cedar network validate --regenerate` writes it again), and the findings of
#      docs/network_validation_findings.md when that file exists.
# It prints its estimate of the time first and each phase's time as it ends.
#
# Usage: scripts/network_validation.sh [--smoke | --repeated | --crossover | --crossover-costly |
#                                       --hierarchical | --segments] [--calibrate-only] [--estimate]
#                                       [OUT_DIR]
#   OUT_DIR: default results/network_validation (--smoke: results/network_validation_smoke,
#            --repeated: results/network_validation_repeated, --crossover:
#            results/network_crossover, --crossover-costly: results/network_crossover_costly,
#            --hierarchical: results/network_hierarchical, --segments:
#            results/network_validation_segments)
#   --smoke: proves the pipeline in a few minutes: one rate, dense and top-k at P = 2 only, 3 steps
#            (1 of warm-up), a short calibration, no links benchmark; the document goes to
#            OUT_DIR/network_validation.md, not docs/.
#   --repeated: the model's headline at P = 4 with an interval: 2 hosts x 2 ranks only; each
#            method once (seed 1) and dense SGD, QSGD, EF-signSGD, local SGD and D-PSGD (those whose
#            communication filled half the step or more in the first measurement) with seeds 2
#            and 3 too; hierarchical left out (its level inside a host is never calibrated); the
#            calibration with every timed loop 3 calls back to back (--min-calls 3), allreduce,
#            broadcast and sendrecv up to 32 MiB, allgather[v] up to 4 MiB (their messages in
#            training are smaller), fitted together by `cedar network fit` in size bands split at
#            1 MiB and 8 MiB; no links benchmark; the document is
#            docs/network_validation_repeated.md.
#   --crossover: where a method's step becomes faster than dense SGD's, measured above 1 Gbit/s
#            (where the first measurement's models put it): P = 2 on 2 hosts x 1 rank (one rank per
#            core) at 1, 3 and 10 Gbit/s, every method but the hierarchical exchange and the
#            parameter server with seeds 1-3, the --repeated calibration; the document is
#            docs/network_crossover.md. The veth links carried dense VGG-11's allreduce at 2.0 and
#            6.9 Gbit/s under tbf at 3 and 10 Gbit/s (bench/cluster_links.sh).
#   --crossover-costly: the crossover of settings whose compression costs more compute per byte
#            saved (experiments/network_crossover_costly.yaml: DGC and top-k at 10% density, QSGD
#            at 8 bits, PowerSGD at rank 64), as --crossover but at 1, 2, 3, 5, 7 and 10 Gbit/s,
#            seeds 1-4, and each rate's runs in rounds (every setting's seed 1, then every
#            setting's seed 2, ...) so that a drift of the machine falls on every setting alike;
#            the document is docs/network_crossover_costly.md.
#   --hierarchical: the hierarchical exchange's two levels each set against its own model, and the
#            exchange against dense SGD on the same links: P = 4 on 2 hosts x 2 ranks at 100 Mbit/s,
#            300 Mbit/s and 1 Gbit/s, dense SGD and the hierarchical exchange with seeds 1-3 in
#            rounds; the --repeated calibration on those links at P = 2 and 4 (the fits at P = 2
#            timed on one host's two ranks: the level inside a host) and on 2 hosts x 1 rank at
#            P = 2 (the level between hosts), no runs there; the document is
#            docs/network_hierarchical.md.
#   --segments: the model's headline at P = 4 on every method but the parameter server (P = 2
#            only): 2 hosts x 2 ranks at 100 Mbit/s, 200 Mbit/s, 400 Mbit/s and 1 Gbit/s, each
#            method once (seed 1); calibrated there at P = 2 and 4, every host's two ranks at once
#            (--every-group: the hierarchical exchange's level inside a host), and on 2 hosts x 1
#            rank at P = 2 (its level between hosts), no runs there; each calibrated on two
#            interleaved grids of sizes
#            (4 KiB x 4^k and 8 KiB x 4^k, allreduce, broadcast and sendrecv to 16 and 32 MiB,
#            allreduce and allgather[v] per rank to 4 and 2 MiB, --min-calls 3), fitted together by
#            `cedar network fit --segments` (every size timed priced at its time, the sizes between
#            on straight lines); each grid's own segments also price the other grid's sizes
#            (`--held-out`, into <out>/<rate>-2x2-held-out.log): the form checked on sizes it was
#            not fitted on; the document is docs/network_validation_segments.md.
#   --calibrate-only: the calibrations alone, no runs and no document (a mode's links calibrated
#            again, in another session, to price the same runs on).
#   --estimate: print the estimate of the time and stop (no root needed).
#   CEDAR_VALIDATION_RATES: the rates (default "100mbit 300mbit 1gbit"; --smoke: the last one)
#   CEDAR_BURST: tbf burst (default 256kb, as bench/cluster_links.sh)
# Expects build/cedar (scripts/build.sh). Refused while a virtual cluster is up.
set -euo pipefail
cd "$(dirname "$0")/.."
SMOKE=0 REPEATED=0 CROSSOVER=0 COSTLY=0 HIERARCHICAL=0 SEGMENTS=0 ESTIMATE_ONLY=0 CALIBRATE_ONLY=0
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --smoke) SMOKE=1 ;;
    --repeated) REPEATED=1 ;;
    --crossover) CROSSOVER=1 ;;
    --crossover-costly) COSTLY=1 ;;
    --hierarchical) HIERARCHICAL=1 ;;
    --segments) SEGMENTS=1 ;;
    --calibrate-only) CALIBRATE_ONLY=1 ;;
    --estimate) ESTIMATE_ONLY=1 ;;
    *) echo "network_validation: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
CEDAR=build/cedar
SUITE=experiments/network_validation.yaml SUITE_NAME=network_validation
BURST="${CEDAR_BURST:-256kb}"
read -r -a RATES <<< "${CEDAR_VALIDATION_RATES:-100mbit 300mbit 1gbit}"
((SMOKE + REPEATED + CROSSOVER + COSTLY + HIERARCHICAL + SEGMENTS > 1)) && {
  echo "network_validation: one of --smoke, --repeated, --crossover, --crossover-costly," \
    "--hierarchical and --segments" >&2
  exit 2
}
((CROSSOVER)) && read -r -a RATES <<< "${CEDAR_VALIDATION_RATES:-1gbit 3gbit 10gbit}"
((COSTLY)) && read -r -a RATES <<< "${CEDAR_VALIDATION_RATES:-1gbit 2gbit 3gbit 5gbit 7gbit 10gbit}"
((SEGMENTS)) && read -r -a RATES <<< "${CEDAR_VALIDATION_RATES:-100mbit 200mbit 400mbit 1gbit}"
INTERLEAVE=0                       # 1: a rate's runs in rounds of seeds, not in blocks by setting
CAL_WORLDS_AT_4=4                  # the P values calibrated on links of P = 4
EVERY_GROUP=()                     # --every-group: a P below 4 timed on every host's ranks at once
REPEAT='^$' SEEDS=(1)              # the runs taken again, with these seeds
# More than one calibration, fitted together (FIT: --bands EDGES or --segments); each entry the
# options of one `cedar network calibrate`, its timings <out>/timings/<rate>-<H>x<R>-<a, b, ...>.yaml.
CALIBRATIONS=() FIT=()
HELD_OUT=0  # 1: the first half of CALIBRATIONS fitted alone prices the second half, and back
LINKS_BENCH=$((!SMOKE))
if ((SMOKE)); then
  OUT="${1:-results/network_validation_smoke}"
  RATES=("${RATES[-1]}")
  LAYOUTS=("2 1 2")                # hosts, ranks per host, P
  ONLY='^(dense|topk)/'            # the runs taken
  SKIP_AT_2='^$' SKIP_AT_4='^$'
  STEPS=3 WARMUP=1
  SET_STEPS=(--set train.max_steps=3)
  CALIBRATE=(--sizes '65536,1048576' --reps 2 --warmup 1)
  DOCUMENT="$OUT/network_validation.md"
elif ((REPEATED || CROSSOVER || COSTLY || HIERARCHICAL || SEGMENTS)); then
  SEEDS=(1 2 3)
  if ((SEGMENTS)); then
    OUT="${1:-results/network_validation_segments}"
    LAYOUTS=("2 1 2" "2 2 4")
    SKIP_AT_2='.' SKIP_AT_4='^ps-'   # 2 hosts x 1 rank: calibrated only (the level between hosts)
    SEEDS=(1)
    CAL_WORLDS_AT_4=2,4 EVERY_GROUP=(--every-group)
    DOCUMENT=docs/network_validation_segments.md
  elif ((REPEATED)); then
    OUT="${1:-results/network_validation_repeated}"
    LAYOUTS=("2 2 4")
    SKIP_AT_2='.' SKIP_AT_4='^(ps-|hierarchical/)'
    REPEAT='^(dense|qsgd|ef-signsgd|local-sgd|dpsgd)/'
    DOCUMENT=docs/network_validation_repeated.md
  elif ((CROSSOVER)); then
    OUT="${1:-results/network_crossover}"
    LAYOUTS=("2 1 2")
    SKIP_AT_2='^(ps-|hierarchical/)' SKIP_AT_4='.'
    REPEAT='.'
    DOCUMENT=docs/network_crossover.md
  elif ((HIERARCHICAL)); then
    OUT="${1:-results/network_hierarchical}"
    LAYOUTS=("2 1 2" "2 2 4")
    ONLY='^(dense|hierarchical)/'
    SKIP_AT_2='.' SKIP_AT_4='^$'     # 2 hosts x 1 rank: calibrated only (the level between hosts)
    REPEAT='.'
    INTERLEAVE=1
    CAL_WORLDS_AT_4=2,4
    DOCUMENT=docs/network_hierarchical.md
  else
    OUT="${1:-results/network_crossover_costly}"
    SUITE=experiments/network_crossover_costly.yaml SUITE_NAME=network_crossover_costly
    LAYOUTS=("2 1 2")
    SKIP_AT_2='^$' SKIP_AT_4='.'
    REPEAT='.'
    SEEDS=(1 2 3 4)
    INTERLEAVE=1
    DOCUMENT=docs/network_crossover_costly.md
  fi
  ((HIERARCHICAL)) || ONLY='.'
  STEPS=12 WARMUP=2
  SET_STEPS=()
  loops='--min-calls 3 --reps 3 --warmup 1'
  if ((SEGMENTS)); then  # two interleaved grids: a and b, then c and d
    CALIBRATIONS=(
      "--ops allreduce,broadcast,sendrecv $loops --sizes 4096,16384,65536,262144,1048576,4194304,16777216"
      "--ops allreduce,allgather,allgatherv $loops --sizes 4096,16384,65536,262144,1048576,4194304"
      "--ops allreduce,broadcast,sendrecv $loops --sizes 8192,32768,131072,524288,2097152,8388608,33554432"
      "--ops allreduce,allgather,allgatherv $loops --sizes 8192,32768,131072,524288,2097152")
    FIT=(--segments)
    HELD_OUT=1
  else
    CALIBRATIONS=(
      "--ops allreduce,broadcast,sendrecv $loops --sizes 4096,65536,262144,1048576,4194304,16777216,33554432"
      "--ops allreduce,allgather,allgatherv $loops --sizes 4096,65536,262144,1048576,4194304")
    FIT=(--bands '1MiB,8MiB')
  fi
  LINKS_BENCH=0
else
  OUT="${1:-results/network_validation}"
  LAYOUTS=("2 1 2" "2 2 4")
  ONLY='.'
  SKIP_AT_2='^hierarchical/'       # nodes of one rank at P = 2 (see the suite's comment)
  SKIP_AT_4='^ps-'                 # a worker beside the server at P = 4 (ditto)
  STEPS=12 WARMUP=2                # the suite's train.max_steps
  SET_STEPS=()
  # Up to 16 MiB (the gradient buckets are 25 MiB; tbf's 256 KB burst carries the small sizes),
  # 3 timed loops per size to keep the calibration at 100mbit to a few minutes.
  CALIBRATE=(--sizes '4096,65536,1048576,4194304,16777216' --reps 3)
  DOCUMENT=docs/network_validation.md
fi
[[ -x $CEDAR ]] || { echo "network_validation: no $CEDAR: run scripts/build.sh first" >&2; exit 4; }

# The runs of the suite (index, name, P) each set of links takes.
mapfile -t ALL < <($CEDAR suite "$SUITE" --dry-run --skip-preflight |
  awk '$1 ~ /^[0-9]+$/ && $3 == "ranks" {print $1, $2, $4}')
runs_at() {  # P
  local skip
  skip=$([[ $1 == 2 ]] && echo "$SKIP_AT_2" || echo "$SKIP_AT_4")
  for line in "${ALL[@]}"; do
    read -r index name ranks <<< "$line"
    [[ $ranks == "$1" && $name =~ $ONLY && ! $name =~ $skip ]] && echo "$index $name"
  done
}

# The estimate: per run, a start (mpirun on the namespaces, the model, the data) and each step's
# compute and bytes over the link at 58% of the rate (what Open MPI's TCP allreduce reached on
# these links, docs/benchmarks.md); per set of links, the calibration. Bus MB per step on a host's
# link from VGG-16's 58.9 MB of gradients and each method's wire format (estimates).
declare -A MB=([dense/np2]=58.9 [dense/np4]=88.4 [dgc/np2]=0.3 [dgc/np4]=0.9 [topk/np2]=1.2
  [topk/np4]=3.5 [qsgd/np2]=9.2 [qsgd/np4]=27.6 [powersgd/np2]=0.6 [powersgd/np4]=0.9
  [ef-signsgd/np2]=1.9 [ef-signsgd/np4]=5.5 [local-sgd/np2]=14.7 [local-sgd/np4]=22.1
  [gtopk/np2]=0.3 [gtopk/np4]=0.5 [dpsgd/np2]=117.8 [dpsgd/np4]=117.8 [hierarchical/np4]=9.2
  [ps-bsp/np2]=117.8 [dense]=58.9 [dgc-10pct]=12.4 [topk-10pct]=11.8 [qsgd-8bit]=16.7
  [powersgd-r64]=10.1)
estimate() {  # rate -> seconds
  local bits total=0 line index name mb P
  bits=$(awk -v r="$1" 'BEGIN { n = r + 0; u = r; sub(/^[0-9.]+/, "", u);
    print n * (u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : 1) }')
  for layout in "${LAYOUTS[@]}"; do
    read -r _ _ P <<< "$layout"
    total=$(awk -v t="$total" -v b="$bits" -v p="$P" -v smoke="$SMOKE" \
      'BEGIN { print t + (smoke ? 20 : 20 + (p == 2 ? 100 : 200) * 1e8 / b) }')
    while read -r index name; do
      mb=${MB[$name]:-1}
      runs=$([[ $name =~ $REPEAT ]] && echo "${#SEEDS[@]}" || echo 1)
      total=$(awk -v t="$total" -v b="$bits" -v p="$P" -v s="$STEPS" -v mb="$mb" -v n="$runs" \
        'BEGIN { print t + n * (15 + s * ((p == 2 ? 0.6 : 1.2) + mb * 8e6 / (0.58 * b))) }')
    done < <(runs_at "$P")
  done
  echo "$total"
}
minutes() { awk -v s="$1" 'BEGIN { printf "%.0f min", s / 60 }'; }
echo "network_validation: estimated time on a quiet 2-core machine:"
grand=$((LINKS_BENCH ? 60 * ${#RATES[@]} : 0))  # bench/cluster_links.sh: about a minute per rate
for rate in "${RATES[@]}"; do
  s=$(estimate "$rate")
  grand=$(awk -v a="$grand" -v b="$s" 'BEGIN { print a + b }')
  echo "  $rate: $(minutes "$s")"
done
echo "  in all, with the links benchmark: $(minutes "$grand")"
((ESTIMATE_ONLY)) && exit 0

source scripts/lib/virtual_cluster.sh
take_virtual_cluster network_validation
mkdir -p "$OUT"

phase() { echo "network_validation: $1 ($(minutes "$SECONDS") so far)"; }
if ((LINKS_BENCH)); then
  bench/cluster_links.sh "$OUT/links" "${RATES[@]}" | tee "$OUT/cluster_links.md"
  phase "links measured"
fi
failed=()
for rate in "${RATES[@]}"; do
  DB="$OUT/$rate.db"
  for layout in "${LAYOUTS[@]}"; do
    read -r H R P <<< "$layout"
    profile="$OUT/$rate-${H}x$R.yaml"
    $CEDAR cluster up --hosts "$H" --ranks-per-host "$R" --bandwidth "$rate" --burst "$BURST" > /dev/null
    worlds=$P
    ((P == 4)) && worlds=$CAL_WORLDS_AT_4
    log="$OUT/$rate-${H}x$R-calibrate.log"
    echo "calibration started $(date -u +%FT%TZ)" > "$log"  # the claim's timing, checkable
    if ((${#CALIBRATIONS[@]} == 0)); then
      $CEDAR network calibrate --cluster virtual -np "$P" --world-sizes "$worlds" --out "$profile" \
        --name "vc-$rate-${H}x$R" "${CALIBRATE[@]}" >> "$log" 2>&1 || { cat "$log" >&2; exit 1; }
    else  # several calibrations' timings, fitted together
      mkdir -p "$OUT/timings"
      timings=()
      letters=(a b c d e f)
      for i in "${!CALIBRATIONS[@]}"; do
        stem="$OUT/timings/$rate-${H}x$R-${letters[$i]}"
        timings+=("$stem.yaml")
        read -r -a options <<< "${CALIBRATIONS[$i]}"
        groups=()
        [[ $worlds == *,* ]] && groups=("${EVERY_GROUP[@]}")
        $CEDAR network calibrate --cluster virtual -np "$P" --world-sizes "$worlds" \
          --out "$stem-profile.yaml" --name "${letters[$i]}" --timings "$stem.yaml" \
          "${options[@]}" "${groups[@]}" >> "$log" 2>&1 || { cat "$log" >&2; exit 1; }
      done
      $CEDAR network fit "${timings[@]}" --out "$profile" --name "vc-$rate-${H}x$R" \
        "${FIT[@]}" >> "$log" 2>&1 || { cat "$log" >&2; exit 1; }
      if ((HELD_OUT)); then  # each half's fit prices the other half's sizes
        half=$((${#timings[@]} / 2))
        first=("${timings[@]:0:half}") second=("${timings[@]:half}")
        { $CEDAR network fit "${first[@]}" --out "$OUT/timings/$rate-${H}x$R-first.yaml" \
            --name "vc-$rate-${H}x$R-first" "${FIT[@]}" --held-out "${second[@]}" &&
          $CEDAR network fit "${second[@]}" --out "$OUT/timings/$rate-${H}x$R-second.yaml" \
            --name "vc-$rate-${H}x$R-second" "${FIT[@]}" --held-out "${first[@]}"; } \
          > "$OUT/$rate-${H}x$R-held-out.log" 2>&1 ||
          { cat "$OUT/$rate-${H}x$R-held-out.log" >&2; exit 1; }
      fi
    fi
    mapfile -t RUNS < <(runs_at "$P")
    ((CALIBRATE_ONLY)) && RUNS=()
    order=()  # "index name seed", in the order they run
    if ((INTERLEAVE)); then
      for seed in "${SEEDS[@]}"; do
        for run in "${RUNS[@]}"; do order+=("$run $seed"); done
      done
    else
      for run in "${RUNS[@]}"; do
        for seed in "${SEEDS[@]}"; do order+=("$run $seed"); done
      done
    fi
    for entry in "${order[@]}"; do
      read -r index name seed <<< "$entry"
      [[ $seed == "${SEEDS[0]}" || $name =~ $REPEAT ]] || continue
      if ! $CEDAR suite "$SUITE" --db "$DB" --only "$index" --quiet --set network.cluster=virtual \
        --set "train.seed=$seed" "${SET_STEPS[@]}" < /dev/null >> "$OUT/$rate-runs.log" 2>&1
      then  # (mpirun reads stdin)
        failed+=("$rate $name seed $seed")
      fi
    done
    $CEDAR cluster down > /dev/null
    phase "$rate on $H x $R measured"
  done
done
if ((CALIBRATE_ONLY)); then
  phase "calibrated (no runs, no document)"
  exit 0
fi
((${#failed[@]} == 0)) || printf 'network_validation: failed (see %s/<rate>-runs.log): %s\n' \
  "$OUT" "${failed[*]}" >&2
dbs=()
for rate in "${RATES[@]}"; do dbs+=("$OUT/$rate.db"); done
# The findings written on an earlier measurement are kept in the document (read them again).
findings=()
FINDINGS="${DOCUMENT%.md}_findings.md"
[[ -f $FINDINGS ]] && findings=(--findings "$FINDINGS")
$CEDAR network validate "${dbs[@]}" --profiles "$OUT"/*.yaml --suite "$SUITE_NAME" \
  --warmup "$WARMUP" --document "$DOCUMENT" "${findings[@]}"
phase "$DOCUMENT written"
