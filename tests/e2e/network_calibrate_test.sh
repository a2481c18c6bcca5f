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
# A fit whose times hardly grow with size (loopback on a loaded machine can bury them in
# scheduling delays) is written with beta = 0 and a warning naming it: the fit itself is checked
# on timings made with known alpha and beta below (network fit) and in network_calibration_test.
for op in allreduce allgather allgatherv broadcast sendrecv; do
  beta=$(echo "$shown" | awk -F'|' -v op="$op" '$2 == " " op " " && $3 + 0 == 2 { print $5 + 0 }')
  check "$op has a fit at P = 2 (beta '${beta}' ns/B)" equals "$(echo "$beta" | grep -c .)" 1
  if ! awk -v b="${beta:-0}" 'BEGIN { exit !(b > 0) }'; then
    check "... beta = 0 comes with a warning naming $op" contains "$out" "warning: $op at P = 2: beta is 0"
  fi
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
# --every-group: P = 2 of 4 ranks timed on ranks 0-1 and 2-3 at once (each in its own
# communicator, each checking its own sums), and the profile says so.
out=$(timeout 50 "${MPIRUN[@]}" -np 4 "$CEDAR" network calibrate --out "$WORK/groups.yaml" \
  --name groups --sizes 64KiB,1MiB --reps 1 --warmup 0 --ops allreduce --world-sizes 2,4 \
  --every-group 2>&1)
check "calibrate --every-group on 4 ranks succeeds" equals "$?" 0
shown=$("$CEDAR" network show "$WORK/groups.yaml")
check "... fitted at P = 2 and 4" equals \
  "$(echo "$shown" | awk -F'|' '$2 == " allreduce " { print $3 + 0 }' | sort -n | tr '\n' ' ')" "2 4 "
check "... labelled with its groups" contains "$shown" \
  "each P below 4 timed in every group of P ranks at once"
out=$(timeout 50 "${MPIRUN[@]}" -np 4 "$CEDAR" network calibrate --out "$WORK/groups3.yaml" \
  --name groups --sizes 64KiB,1MiB --reps 1 --warmup 0 --ops allreduce --world-sizes 3 \
  --every-group 2>&1)
check "--every-group with P = 3 of 4 ranks fails" greater "$?" 0
check "... naming the option and P" contains "$out" "--every-group: P = 3 does not divide the 4 ranks"
# --min-calls: every timed loop makes at least that many calls back to back (the 32 MiB call that
# otherwise fills a 20 ms loop alone), as a step's exchanges follow each other.
out=$(timeout 50 "${MPIRUN[@]}" -np 2 "$CEDAR" network calibrate --out "$WORK/loops.yaml" \
  --name loops --sizes 64KiB,32MiB --reps 2 --warmup 1 --min-calls 3 --ops allreduce \
  --timings "$WORK/loops-timings.yaml" 2>&1)
check "calibrate --min-calls 3 succeeds" equals "$?" 0
calls=$(echo "$out" | awk -F'|' '$2 == " allreduce " && $3 + 0 == 2 && ($4 + 0 == 65536 || $4 + 0 == 33554432) { print $5 + 0 }')
check "... two sizes measured" equals "$(echo "$calls" | grep -c .)" 2
check "... each with at least 3 calls per loop" equals "$(echo "$calls" | awk '$1 < 3' | wc -l)" 0
# --timings: the medians measured, which `network fit` fits to the same profile without timing.
check "... and writes its timings" contains "$(cat "$WORK/loops-timings.yaml")" "{op: allreduce, P: 2, bytes: 33554432, calls: "
"$CEDAR" network fit "$WORK/loops-timings.yaml" --out "$WORK/refit.yaml" --name loops >/dev/null
check "network fit of calibrate's timings succeeds" equals "$?" 0
check "... giving the profile calibrate wrote" equals "$("$CEDAR" network show "$WORK/refit.yaml")" \
  "$("$CEDAR" network show "$WORK/loops.yaml")"

# network fit on timings made with known terms (seconds of an allreduce on P ranks written out
# here: 2(P-1) alpha + 2(P-1)/P S beta): 50 us and 0.8 Gbit/s up to 1 MiB, 0.4 Gbit/s from 8 MiB,
# as a link whose rate changes with the message size. Fitted from 8 MiB on, the large regime's
# alpha and beta come back (to the printed digits) and the profile says which sizes it was fitted
# on; fitted on all sizes, beta is neither.
{
  echo 'measured_on: "synthetic: two regimes"'
  echo 'timings:'
  for p in 2 4; do
    for s in 65536 262144 1048576 8388608 16777216 33554432; do
      awk -v p=$p -v s=$s 'BEGIN { b = s >= 8388608 ? 2e-8 : 1e-8;
        printf "  - {op: allreduce, P: %d, bytes: %d, calls: 3, seconds: %.15g}\n", p, s,
          2 * (p - 1) * 50e-6 + 2 * (p - 1) / p * s * b }'
    done
  done
} > "$WORK/synthetic.yaml"
out=$("$CEDAR" network fit "$WORK/synthetic.yaml" --out "$WORK/large.yaml" --name large \
  --min-bytes 8MiB 2>&1)
check "network fit --min-bytes 8MiB succeeds" equals "$?" 0
shown=$("$CEDAR" network show "$WORK/large.yaml")
for p in 2 4; do
  check "... allreduce at P = $p: alpha 50 us, beta 20 ns/B" equals \
    "$(echo "$shown" | awk -F'|' -v p=$p '$2 == " allreduce " && $3 + 0 == p { print $4 + 0, $5 + 0 }')" "50 20"
done
check "... labelled with the sizes fitted" contains "$shown" \
  "calibrated (measured on synthetic: two regimes; fitted on 8 MiB to the largest size)"
check "... from the 6 timings kept of 12" equals \
  "$(echo "$out" | awk -F'|' 'NF == 8 && $2 == " allreduce " && $4 + 0 > 0' | wc -l)" 6
"$CEDAR" network fit "$WORK/synthetic.yaml" --out "$WORK/all.yaml" --name all >/dev/null
beta=$("$CEDAR" network show "$WORK/all.yaml" | awk -F'|' '$2 == " allreduce " && $3 + 0 == 2 { print $5 + 0 }')
check "... fitted on every size, beta is neither regime's (got $beta)" awk -v b="$beta" \
  'BEGIN { exit !(b != 10 && b != 20 && b > 0) }'
# --bands: both regimes in one profile, each size band fitted on its own sizes.
"$CEDAR" network fit "$WORK/synthetic.yaml" --out "$WORK/banded.yaml" --name banded \
  --bands 4MiB >/dev/null
check "network fit --bands 4MiB succeeds" equals "$?" 0
shown=$("$CEDAR" network show "$WORK/banded.yaml")
for p in 2 4; do
  check "... allreduce at P = $p below 4 MiB: alpha 50 us, beta 10 ns/B" equals \
    "$(echo "$shown" | awk -F'|' -v p=$p '$2 == " allreduce " && $3 + 0 == p && $4 ~ /^ 0 to below 4194304 $/ { print $5 + 0, $6 + 0 }')" "50 10"
  check "... from 4 MiB: alpha 50 us, beta 20 ns/B" equals \
    "$(echo "$shown" | awk -F'|' -v p=$p '$2 == " allreduce " && $3 + 0 == p && $4 ~ /^ 4194304 and up $/ { print $5 + 0, $6 + 0 }')" "50 20"
done
check "... labelled with its bands" contains "$shown" "size bands from 4 MiB"
bad=$("$CEDAR" network fit "$WORK/synthetic.yaml" --out "$WORK/x.yaml" --name x --bands 128KiB 2>&1)
check "a band of one size is refused naming it" contains "$bad" \
  "allreduce at P = 2: the band below 128 KiB has 1 size"
# Several timings files of the same links are fitted together; of other links, refused.
{ head -2 "$WORK/synthetic.yaml"; grep -F 'P: 2,' "$WORK/synthetic.yaml"; } > "$WORK/p2.yaml"
{ head -2 "$WORK/synthetic.yaml"; grep -F 'P: 4,' "$WORK/synthetic.yaml"; } > "$WORK/p4.yaml"
"$CEDAR" network fit "$WORK/p2.yaml" "$WORK/p4.yaml" --out "$WORK/both.yaml" --name both \
  --bands 4MiB >/dev/null
check "network fit of two files succeeds" equals "$?" 0
check "... and fits both files' P as one file's" equals \
  "$("$CEDAR" network show "$WORK/both.yaml" | grep -v 'measured on')" \
  "$("$CEDAR" network show "$WORK/banded.yaml" | grep -v 'measured on')"
sed 's/two regimes/other links/' "$WORK/p4.yaml" > "$WORK/other.yaml"
bad=$("$CEDAR" network fit "$WORK/p2.yaml" "$WORK/other.yaml" --out "$WORK/x.yaml" --name x 2>&1)
check "timings of other links are refused naming the file" contains "$bad" \
  "other.yaml: measured on \"synthetic: other links\""
bad=$("$CEDAR" network fit "$WORK/synthetic.yaml" --out "$WORK/x.yaml" --name x --min-bytes 64MiB 2>&1)
check "a range without timings is refused naming the file" contains "$bad" "synthetic.yaml: no timing lies within"
# --segments with --held-out: fitted on 64 KiB, 1 MiB and 16 MiB, the other sizes priced on the
# straight lines between them: 256 KiB lies on the small regime's own line (error 0); 8 MiB, on the
# line from 1 MiB (small regime) to 16 MiB (large), and 32 MiB, on that line carried on, are
# priced as worked out here from the two regimes' terms.
{ head -2 "$WORK/synthetic.yaml"; grep -E 'bytes: (65536|1048576|16777216),' "$WORK/synthetic.yaml"; } > "$WORK/fitted.yaml"
{ head -2 "$WORK/synthetic.yaml"; grep -E 'bytes: (262144|8388608|33554432),' "$WORK/synthetic.yaml"; } > "$WORK/held.yaml"
out=$("$CEDAR" network fit "$WORK/fitted.yaml" --out "$WORK/segments.yaml" --name seg --segments \
  --held-out "$WORK/held.yaml" 2>&1)
check "network fit --segments --held-out succeeds" equals "$?" 0
check "... labelled as segments" contains "$("$CEDAR" network show "$WORK/segments.yaml")" \
  "size bands in segments between the sizes timed"
held_error() {  # P bytes -> the printed error of that held-out row
  echo "$out" | awk -F'|' -v p="$1" -v s="$2" 'NF == 8 && $2 == " allreduce " && $3 + 0 == p && $4 + 0 == s { gsub(/ /, "", $7); print $7 }'
}
expected_error() {  # P bytes -> (line through 1 MiB and 16 MiB at bytes - timed) / timed
  awk -v p="$1" -v s="$2" 'function t(x) { return 2 * (p - 1) * 50e-6 + 2 * (p - 1) / p * x * (x >= 8388608 ? 2e-8 : 1e-8) }
    BEGIN { a = 1048576; b = 16777216; m = t(a) + (t(b) - t(a)) * (s - a) / (b - a);
      printf "%+.1f%%", 100 * (m - t(s)) / t(s) }'
}
for p in 2 4; do
  check "... 256 KiB at P = $p lies on its segment" equals "$(held_error $p 262144)" "+0.0%"
  for s in 8388608 33554432; do
    check "... $s bytes at P = $p priced on the segment from 1 MiB" equals \
      "$(held_error $p $s)" "$(expected_error $p $s)"
  done
done
check "... and the median over the 6 held-out sizes printed" contains "$out" "| every one | | 6 |"
bad=$("$CEDAR" network fit "$WORK/fitted.yaml" --out "$WORK/x.yaml" --name x --segments --bands 1MiB 2>&1)
check "--segments with --bands is refused" contains "$bad" "excludes"

bad=$("$CEDAR" network calibrate --out "$WORK/x.yaml" --name x --idle-ms 100 --min-calls 2 2>&1)
check "--idle-ms with --min-calls is refused naming --min-calls" contains "$bad" "--min-calls: --idle-ms"
bad=$("$CEDAR" network calibrate --out "$WORK/x.yaml" --name x --ops allgather 2>&1)
check "--ops without allreduce is refused naming --ops" contains "$bad" "--ops: include allreduce"
bad=$("$CEDAR" network calibrate --out "$WORK/x.yaml" --name x --ops allreduce,gossip 2>&1)
check "an unknown collective is refused naming it" contains "$bad" "gossip"
finish
