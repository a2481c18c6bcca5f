#!/usr/bin/env bash
# End to end: the preflight of `cedar suite` and `cedar sbatch`. A suite with one valid run and
# two broken ones (a truncated CIFAR batch; a batch larger than the data and an unwritable
# checkpoint folder) stops before launching anything: non-zero exit, every problem named with its
# run, no mpirun started (a fake mpirun first on PATH records every call), and the results
# database neither created nor changed. --dry-run lists the runs and the problems; --skip-preflight
# launches anyway; `cedar sbatch` stops before sbatch the same way.
# Usage: preflight_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"
WORK=$(mktemp -d /tmp/cedar-e2e-preflight.XXXXXX)
DB="$WORK/out/results.db"
trap 'rm -rf "$WORK"' EXIT

# Stand-ins that record their calls: mpirun (every suite run goes through it at 2 ranks) and sbatch.
mkdir -p "$WORK/bin"
printf '#!/bin/sh\necho "$@" >> "%s/mpirun.calls"\nexit 0\n' "$WORK" > "$WORK/bin/mpirun"
printf '#!/bin/sh\necho "$@" >> "%s/sbatch.calls"\necho 4242\n' "$WORK" > "$WORK/bin/sbatch"
chmod +x "$WORK/bin/mpirun" "$WORK/bin/sbatch"
export PATH="$WORK/bin:$PATH"
calls() { if [ -f "$WORK/$1.calls" ]; then wc -l < "$WORK/$1.calls"; else echo 0; fi; }

# CIFAR-10 files in the binary format, data_batch_2.bin cut 100 bytes into its third record.
mkdir -p "$WORK/cifar"
for f in data_batch_1 data_batch_3 data_batch_4 data_batch_5 test_batch; do
  head -c $((2 * 3073)) /dev/zero > "$WORK/cifar/$f.bin"
done
head -c $((2 * 3073 + 100)) /dev/zero > "$WORK/cifar/data_batch_2.bin"

suite() {  # suite FILE OVERRIDES...: a 2-rank LeNet-5 suite on Fashion-MNIST, one run per override
  local file="$1"; shift
  printf 'name: pf\nsuite: pf\nmodel: {name: lenet5}\n' > "$file"
  printf 'data: {name: fashion-mnist, train_limit: 2048, test_limit: 256}\n' >> "$file"
  printf 'train: {epochs: 1, batch_size: 32, threads: 1}\nalgorithm: dense\n' >> "$file"
  printf 'grid:\n  world_size: [2]\n  overrides:\n' >> "$file"
  for o in "$@"; do printf '    - %s\n' "$o" >> "$file"; done
}
suite "$WORK/good.yaml" "{train.epochs: 1}"
suite "$WORK/broken.yaml" "{train.epochs: 1}" "{data.name: cifar10, data.root: $WORK/cifar}" \
  "{train.batch_size: 4096, train.checkpoint_dir: /proc/cedar-e2e/checkpoints}"

out=$("$CEDAR" suite "$WORK/broken.yaml" --db "$DB" 2>&1); rc=$?
echo "$out"
check "a broken suite exits non-zero" greater "$rc" 0
check "... in its preflight" contains "$out" "preflight: 3 problems stop 2 of 3 run(s); nothing was launched"
check "the truncated CIFAR file, with its run" contains "$out" \
  "cifar10: CIFAR: $WORK/cifar/data_batch_2.bin is truncated or not a CIFAR-10 batch: 6246 bytes"
check "... and its run" contains "$(echo "$out" | grep data_batch_2.bin)" "[run dense/o1]"
check "the batch larger than the data" contains "$out" \
  "train.batch_size 4096 x 2 rank(s) = 8192 images per step, more than the 2048 training images of fashion-mnist (data.train_limit 2048)"
check "the unwritable checkpoint folder" contains "$out" \
  "checkpoint folder '/proc/cedar-e2e/checkpoints': cannot create files in '/proc'"
check "grouped: data, sizes, folders" equals "$(echo "$out" | grep -E '^  [a-z]+:$' | tr -d ' \n')" "data:sizes:folders:"
check "no mpirun launched" equals "$(calls mpirun)" 0
check "no database created" equals "$(ls -A "$WORK/out" 2>/dev/null | wc -l)" 0

# The dry run lists every run, then what a launch would stop on; it exits 0 and writes nothing.
out=$("$CEDAR" suite "$WORK/broken.yaml" --db "$DB" --dry-run 2>&1); rc=$?
check "dry run exits 0" equals "$rc" 0
check "dry run lists the 3 runs" contains "$out" "suite 'pf': 3 run(s)"
check "dry run prints the problems" contains "$out" "preflight: 3 problems stop 2 of 3 run(s); a launch would stop here:"
check "... each of them" equals "$(echo "$out" | grep -c '^    - ')" 3
check "dry run launches nothing" equals "$(calls mpirun)" 0

# The valid suite passes and launches its run (the fake mpirun records it; the database is
# created); the broken one then leaves that database as it was.
out=$("$CEDAR" suite "$WORK/good.yaml" --db "$DB" --quiet 2>&1); rc=$?
check "a valid suite passes its preflight" equals "$rc" 0
check "... saying what it checked" contains "$out" "preflight: 1 run(s) checked: 1 data set(s), 1 model(s), in "
check "... and launches its run under mpirun" equals "$(calls mpirun)" 1
check "... which gets the run's configuration" contains "$(cat "$WORK/mpirun.calls")" "--set name=dense --set suite=pf"
before=$(md5sum "$DB" | cut -d' ' -f1)
"$CEDAR" suite "$WORK/broken.yaml" --db "$DB" > /dev/null 2>&1; rc=$?
check "the broken suite still stops" greater "$rc" 0
check "... launching nothing" equals "$(calls mpirun)" 1
check "... and leaving the database unchanged" equals "$(md5sum "$DB" | cut -d' ' -f1)" "$before"

# --skip-preflight launches every run (here into the fake mpirun).
"$CEDAR" suite "$WORK/broken.yaml" --db "$WORK/skip.db" --quiet --skip-preflight > /dev/null 2>&1
check "--skip-preflight launches all 3 runs" equals "$(calls mpirun)" 4

# cedar sbatch: the same preflight before anything is written or submitted.
out=$("$CEDAR" sbatch "$WORK/broken.yaml" --nodes 1 --ntasks-per-node 2 --db "$WORK/job/results.db" 2>&1); rc=$?
check "sbatch of a broken suite exits non-zero" greater "$rc" 0
check "... naming the problems" contains "$out" "$WORK/cifar/data_batch_2.bin"
check "... without calling sbatch" equals "$(calls sbatch)" 0
check "... or writing a job folder" equals "$(ls -A "$WORK/job" 2>/dev/null | wc -l)" 0
out=$("$CEDAR" sbatch "$WORK/broken.yaml" --nodes 1 --ntasks-per-node 2 --db "$WORK/job/results.db" --dry-run 2>&1 >/dev/null); rc=$?
check "sbatch --dry-run exits 0 and prints the problems" contains "$rc:$out" "0:preflight: 3 problems stop 2 of 3 run(s); a submission would stop here:"
"$CEDAR" sbatch "$WORK/broken.yaml" --nodes 1 --ntasks-per-node 2 --db "$WORK/job/results.db" --skip-preflight > /dev/null 2>&1
check "sbatch --skip-preflight submits" equals "$(calls sbatch)" 1
check "... a job whose suites skip it too" contains "$(cat "$WORK"/job/slurm/*/job.sh)" "PREFLIGHT=(--skip-preflight)"
finish
