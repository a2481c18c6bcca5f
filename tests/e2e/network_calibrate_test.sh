#!/usr/bin/env bash
# End to end: `cedar network calibrate` under `mpirun -np 2` on this machine writes a profile that
# `cedar network show` (the same loader `cedar project --networks` uses) reads back, with a fit of
# every collective at P = 2 and a bandwidth term in each. No speed is asserted: the machine may be
# busy, and loopback MPI is no network. Sizes reach 32 MiB so that the copies outweigh
# scheduling delays on a loaded machine.
CEDAR="$1"
source "$(dirname "$0")/lib.sh"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PROFILE="$WORK/loopback.yaml"

out=$(timeout 50 "${MPIRUN[@]}" -np 2 "$CEDAR" network calibrate --out "$PROFILE" --name loopback \
  --sizes 64KiB,2MiB,32MiB --reps 3 --warmup 1 --measured-on "the e2e test's loopback" 2>&1)
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
finish
