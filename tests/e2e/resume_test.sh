#!/usr/bin/env bash
# Reliability end to end, on real Fashion-MNIST with 2 MPI ranks and one thread per rank:
# - a rank killed with SIGKILL mid-run: the job exits non-zero within a bounded time, the run is
#   marked failed (or found stale when rank 0 died), the database stays intact, and
#   `cedar run --resume` continues from the last checkpoint to exactly the metrics of an
#   uninterrupted run (bitwise), for every algorithm that carries state between steps;
# - SIGTERM (what Slurm sends at a time limit): a checkpoint at the step where all ranks stop;
# - NaN/Inf: the run is marked diverged with the step and the tensor (or the test loss);
# - an unwritable database or checkpoint folder: a clear error before training starts;
# - two suites sharing one database at once: every run exactly once, no lost rows.
# Usage: resume_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-resume.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
REF="$WORK/reference.db"
DB="$WORK/resumed.db"

cat > "$WORK/base.yaml" <<YAML
name: resume
suite: reliability
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 1536, test_limit: 300}
train: {epochs: 2, batch_size: 32, threads: 1, seed: 11, checkpoint_every_steps: 8, eval_every_steps: 20}
optimizer: {lr: 0.05, schedule: cosine, weight_decay: 5.0e-4}
algorithm: {name: dense}
YAML

# algorithm spec | extra overrides | rank to kill
CASES=(
  "dgc|--set algorithm.warmup_epochs=1|1"
  "powersgd||0"
  "lag|--set optimizer.lr=0.3|1"
  "ef-signsgd|--set optimizer.lr=0.3|1"
  "local-sgd|--set algorithm.period=4 --set optimizer.name=lars --set optimizer.lr=1|1"
  "choco-sgd||1"
)
run_id=0
# The checkpoint folder of run ID: named by the run's uuid.
checkpoints() { echo "$DB.checkpoints/run-$(q "SELECT uuid FROM runs WHERE id=$1")"; }

for case in "${CASES[@]}"; do
  IFS='|' read -r alg extra victim <<< "$case"
  name="resume-$alg"
  # shellcheck disable=SC2086
  "${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/base.yaml" --db "$REF" --quiet --set name="$name" \
      --set algorithm.name="$alg" $extra > "$WORK/ref-$alg.log" 2>&1
  check "$alg: uninterrupted run completes" equals "$(sqlite3 "$REF" "SELECT status FROM runs WHERE name='$name'")" completed

  run_id=$((run_id + 1))
  earlier="SELECT COUNT(*), TOTAL(train_loss), TOTAL(cum_payload_bytes) FROM steps WHERE run_id < $run_id"
  before=$(sqlite3 "$DB" "$earlier" 2>/dev/null || echo "0|0.0|0.0")
  # Every rank holds after step 16 (its checkpoint written) until the kill.
  # shellcheck disable=SC2086
  CEDAR_HOLD_AFTER_STEP=16 CEDAR_HOLD_FILE="$WORK/hold-$alg" "${MPIRUN[@]}" -np 2 "$CEDAR" run \
      "$WORK/base.yaml" --db "$DB" --quiet --set name="$name" \
      --set algorithm.name="$alg" $extra > "$WORK/killed-$alg.log" 2>&1 &
  job=$!
  pid=$(wait_held "$WORK/hold-$alg" 2 "$victim" "$job")
  step=$(awk '{print $2}' "$(checkpoints "$run_id")/LATEST" 2>/dev/null)
  check "$alg: every rank holds after step 16, its last checkpoint" equals "$step" 16
  start=$(date +%s)
  kill -9 "$pid"
  wait "$job"; rc=$?
  took=$(( $(date +%s) - start ))
  check "$alg: killing rank $victim (pid $pid, after checkpoint $step) ends the job non-zero" greater "$rc" 0
  check "$alg: ... within 30 s (took $took s)" greater 30 "$took"
  if [ "$victim" = 0 ]; then
    check "$alg: rank 0 gone: the record still says running" equals "$(q "SELECT status FROM runs WHERE id=$run_id")" running
    "$CEDAR" report "$DB" > /dev/null 2> "$WORK/report-$alg.log"
    check "$alg: cedar report finds it stale and marks it failed" contains "$(q "SELECT status||': '||error FROM runs WHERE id=$run_id")" "failed: stale: its process"
  else
    check "$alg: rank 0 marks the run failed" equals "$(q "SELECT status FROM runs WHERE id=$run_id")" failed
  fi
  check "$alg: database intact after the kill" equals "$(q "PRAGMA integrity_check")" ok
  check "$alg: earlier runs' rows intact" equals "$(q "$earlier")" "$before"

  # shellcheck disable=SC2086
  out=$("${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/base.yaml" --db "$DB" --set name="$name" \
      --set algorithm.name="$alg" $extra --resume 2>&1); rc=$?
  check "$alg: --resume continues run $run_id after its checkpoint" contains "$out" "run $run_id '$name'"
  check "$alg: resumed run completes" equals "$rc" 0
  check "$alg: the reference has every step (48) and evaluation" greater "$(metrics "$REF" "$name" | wc -l)" 48
  check "$alg: resumed metrics equal the uninterrupted run's, bitwise" equals \
    "$(metrics "$DB" "$name" | md5sum)" "$(metrics "$REF" "$name" | md5sum)"
  check "$alg: checkpoints removed once completed" equals "$(ls "$(checkpoints "$run_id")" 2>/dev/null | wc -l)" 0
done

# SIGTERM to the whole job: all ranks stop at the same step and write a checkpoint there
# (signSGD: its state is the Signum momentum).
name="resume-signsgd"
"${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/base.yaml" --db "$REF" --quiet --set name="$name" \
    --set algorithm.name=signsgd --set optimizer.lr=0.001 > /dev/null 2>&1
sigterm_when_held 12 2 "$WORK/term.log" "${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/base.yaml" \
    --db "$DB" --quiet --set name="$name" --set algorithm.name=signsgd --set optimizer.lr=0.001
rc=$?
run_id=$((run_id + 1))
check "SIGTERM: job exits non-zero" greater "$rc" 0
check "SIGTERM: failed with a checkpoint at the stop" contains "$(q "SELECT status||': '||error FROM runs WHERE id=$run_id")" "(checkpoint written)"
stop_step=$(awk '{print $2}' "$(checkpoints "$run_id")/LATEST")
check "SIGTERM: the ranks held after step 12 and stopped together at the next one" equals "$stop_step" 13
check "SIGTERM: every step up to the checkpoint committed ($stop_step)" equals "$(q "SELECT COUNT(*) FROM steps WHERE run_id=$run_id")" "$stop_step"
"${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/base.yaml" --db "$DB" --quiet --set name="$name" \
    --set algorithm.name=signsgd --set optimizer.lr=0.001 --resume > /dev/null 2>&1
check "SIGTERM: the reference has every step" greater "$(metrics "$REF" "$name" | wc -l)" 48
check "SIGTERM: resumed metrics equal the uninterrupted run's" equals \
  "$(metrics "$DB" "$name" | md5sum)" "$(metrics "$REF" "$name" | md5sum)"

# NaN/Inf: an absurd learning rate makes the parameters overflow.
out=$("$CEDAR" run "$WORK/base.yaml" --db "$DB" --set name=nan --set optimizer.lr=1e30 2>&1); rc=$?
check "NaN: exits non-zero" greater "$rc" 0
check "NaN: marked diverged, naming the step and the tensor" contains \
  "$(q "SELECT status||': '||error FROM runs WHERE name='nan'")" "diverged: step 1: the update of"
# ... or, stopped after one step, only the evaluation sees it: still diverged, never a database error.
out=$("$CEDAR" run "$WORK/base.yaml" --db "$DB" --set name=nan-eval --set optimizer.lr=1e30 \
      --set train.max_steps=1 2>&1); rc=$?
check "NaN at an evaluation: exits non-zero" greater "$rc" 0
check "NaN at an evaluation: marked diverged, naming the test loss" contains \
  "$(q "SELECT status||': '||error FROM runs WHERE name='nan-eval'")" "diverged: step 1: the test loss of the averaged model is"

# Unwritable places: clear errors before training, nothing else touched.
runs_before=$(q "SELECT COUNT(*) FROM runs")
out=$("$CEDAR" run "$WORK/base.yaml" --db /proc/cedar/x.db 2>&1); rc=$?
check "unwritable database: exits non-zero" greater "$rc" 0
check "unwritable database: the error names it" contains "$out" "/proc/cedar/x.db"
out=$("$CEDAR" run "$WORK/base.yaml" --db "$DB" --set name=nockpt --set train.checkpoint_dir=/proc/cedar 2>&1); rc=$?
check "unwritable checkpoint folder: exits non-zero" greater "$rc" 0
check "unwritable checkpoint folder: the error names it" contains "$out" "/proc/cedar"
check "... and no step was trained" equals "$(q "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name='nockpt'")" 0
check "... the other runs untouched" equals "$(q "SELECT COUNT(*) FROM runs WHERE name != 'nockpt'")" "$runs_before"

# A full disk: a 512 KiB file system is too small for the run's rows; the error comes first.
TINY="$WORK/tiny"
mkdir -p "$TINY"
if mount -t tmpfs -o size=512k tmpfs "$TINY" 2>/dev/null; then
  out=$("$CEDAR" run "$WORK/base.yaml" --db "$TINY/full.db" 2>&1); rc=$?
  check "full disk: exits non-zero" greater "$rc" 0
  check "full disk: the error names the folder and the space" contains "$out" "not enough free space for the results database '$TINY/full.db': '$TINY' has"
  check "full disk: nothing written" equals "$(ls "$TINY" | wc -l)" 0
  umount "$TINY"
else
  echo "note: cannot mount a small tmpfs here (not root?); the full-disk check did not run"
fi

# Two suites on one database at once: each run is claimed once, no lost rows, no lock errors.
cat > "$WORK/shared.yaml" <<YAML
name: shared
suite: shared
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 1024, test_limit: 200}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 3}
optimizer: {lr: 0.05, schedule: constant}
algorithm: dense
grid:
  world_size: [1]
  algorithm: [dense, topk, qsgd, terngrad, fp16, signsgd]
YAML
SHARED="$WORK/shared.db"
"$CEDAR" suite "$WORK/shared.yaml" --db "$SHARED" --quiet > "$WORK/suite-a.log" 2>&1 &
a=$!
"$CEDAR" suite "$WORK/shared.yaml" --db "$SHARED" --quiet > "$WORK/suite-b.log" 2>&1 &
b=$!
wait $a; rc_a=$?
wait $b; rc_b=$?
check "concurrent suites both succeed" equals "$rc_a,$rc_b" "0,0"
# The logs go with $WORK when the test exits: a failing suite's end is printed here.
[ "$rc_a,$rc_b" = "0,0" ] || tail -n 20 "$WORK/suite-a.log" "$WORK/suite-b.log"
check "every run exactly once, completed" equals "$(sqlite3 "$SHARED" "SELECT COUNT(*)||','||COUNT(DISTINCT config_hash)||','||SUM(status='completed') FROM runs")" "6,6,6"
check "every step row present (6 runs x 32 steps)" equals "$(sqlite3 "$SHARED" "SELECT COUNT(*) FROM steps")" 192
check "no 'database is locked'" equals "$(cat "$WORK"/suite-*.log | grep -ci 'locked')" 0
check "the suites shared the work" greater "$(grep -c 'held by another process\|completed earlier' "$WORK/suite-a.log" "$WORK/suite-b.log" | awk -F: '{s+=$2} END {print s}')" 0
check "shared database intact" equals "$(sqlite3 "$SHARED" "PRAGMA integrity_check")" ok

finish
