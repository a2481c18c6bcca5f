#!/usr/bin/env bash
# End to end: `cedar network calibrate` under `mpirun -np 2` on this machine writes a profile that
# `cedar network show` (the same loader `cedar project --networks` uses) reads back, with a fit of
# every collective at P = 2 and a bandwidth term in each. No speed is asserted: the machine may be
# busy, and loopback MPI is no network. Sizes reach 32 MiB so that the copies outweigh
# scheduling delays on a loaded machine, and each median is of 5 loops.
CEDAR="$1"
source "$(dirname "$0")/lib.sh"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PROFILE="$WORK/loopback.yaml"

out=$(timeout 50 "${MPIRUN[@]}" -np 2 "$CEDAR" network calibrate --out "$PROFILE" --name loopback \
  --sizes 64KiB,2MiB,32MiB --reps 5 --warmup 1 --measured-on "the e2e test's loopback" 2>&1)
check "calibrate under mpirun -np 2 succeeds" equals "$?" 0
echo "$out" | tail -12
check "... and writes the profile" test -s "$PROFILE"
shown=$("$CEDAR" network show "$PROFILE" 2>&1)
check "the profile loads" equals "$?" 0
check "... labelled as measured" contains "$shown" "calibrated (measured on the e2e test's loopback)"
for op in allreduce allgather allgatherv broadcast sendrecv; do
  beta=$(echo "$shown" | awk -F'|' -v op="$op" '$2 == " " op " " && $3 + 0 == 2 { print $5 + 0 }')
  check "$op has a fit at P = 2 with beta > 0 (got '${beta}' ns/B)" greater "${beta:-0}" 0
done
calls=$(echo "$out" | grep -c "wrong result")
check "every checked result was right" equals "$calls" 0

# --idle-ms: each timed call alone after the link stayed quiet that long, as a training step's
# compute leaves it (sizes far apart, as above, so that one call per timing outweighs the noise of
# a loaded machine). 2 sizes x 3 timed calls each wait 200 ms first: the calibration cannot take
# less than 1.2 s (a lower bound, whatever the machine's speed); --ops allreduce fits allreduce
# only, and the profile says how it was measured.
IDLE="$WORK/idle.yaml"
t0=$(date +%s.%N)
out=$(timeout 50 "${MPIRUN[@]}" -np 2 "$CEDAR" network calibrate --out "$IDLE" --name idle \
  --sizes 64KiB,32MiB --reps 3 --warmup 1 --idle-ms 200 --ops allreduce \
  --measured-on "the e2e test's loopback" 2>&1)
rc=$?
t1=$(date +%s.%N)
echo "$out" | tail -12
check "calibrate --idle-ms 200 --ops allreduce succeeds" equals "$rc" 0
# What was measured, before the fit: one row per size with its median seconds per call and the
# rate of its bus bytes (allreduce at P = 2: 2(P-1)/P * S = S bytes per call).
for size in 65536 33554432; do
  row=$(echo "$out" | awk -F'|' -v s="$size" '$2 == " allreduce " && $3 + 0 == 2 && $4 + 0 == s')
  check "the measured median of $size bytes is printed" equals "$(echo "$row" | grep -c .)" 1
  check "... its rate is its bus bytes over its seconds" awk -v r="$row" 'BEGIN {
    split(r, f, "|"); want = f[4] * 8 / f[6] / 1e6; exit !(f[7] > 0 && (f[7] - want) ^ 2 < (0.05 + want * 0.001) ^ 2) }'
  check "... timed alone: one call per loop" equals "$(echo "$row" | awk -F'|' '{print $5 + 0}')" 1
done
check "... and waited 200 ms before each of its 6 timed calls" greater \
  "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 1.2
shown=$("$CEDAR" network show "$IDLE" 2>&1)
check "... labelled with its idle time" contains "$shown" \
  "calibrated (measured on the e2e test's loopback; each timed call alone after 200 ms idle)"
check "... allreduce fitted at P = 2" equals \
  "$(echo "$shown" | awk -F'|' '$2 == " allreduce " && $3 + 0 == 2' | wc -l)" 1
check "... and no other collective" equals \
  "$(echo "$shown" | awk -F'|' '$2 ~ /allgather|broadcast|sendrecv/' | wc -l)" 0
# --min-calls: every timed loop makes at least that many calls back to back (the 32 MiB call that
# otherwise fills a 20 ms loop alone), as a step's exchanges follow each other.
out=$(timeout 50 "${MPIRUN[@]}" -np 2 "$CEDAR" network calibrate --out "$WORK/loops.yaml" \
  --name loops --sizes 64KiB,32MiB --reps 2 --warmup 1 --min-calls 3 --ops allreduce 2>&1)
check "calibrate --min-calls 3 succeeds" equals "$?" 0
calls=$(echo "$out" | awk -F'|' '$2 == " allreduce " && $3 + 0 == 2 && ($4 + 0 == 65536 || $4 + 0 == 33554432) { print $5 + 0 }')
check "... two sizes measured" equals "$(echo "$calls" | grep -c .)" 2
check "... each with at least 3 calls per loop" equals "$(echo "$calls" | awk '$1 < 3' | wc -l)" 0
bad=$("$CEDAR" network calibrate --out "$WORK/x.yaml" --name x --idle-ms 100 --min-calls 2 2>&1)
check "--idle-ms with --min-calls is refused naming --min-calls" contains "$bad" "--min-calls: --idle-ms"
bad=$("$CEDAR" network calibrate --out "$WORK/x.yaml" --name x --ops allgather 2>&1)
check "--ops without allreduce is refused naming --ops" contains "$bad" "--ops: include allreduce"
bad=$("$CEDAR" network calibrate --out "$WORK/x.yaml" --name x --ops allreduce,gossip 2>&1)
check "an unknown collective is refused naming it" contains "$bad" "gossip"
finish
