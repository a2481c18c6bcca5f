#!/usr/bin/env bash
# End to end: the parameter server (algorithm ps) with batch norm: ResNet-20 on synthetic 8x8
# images through `cedar run` under mpirun, checked through the database. Each worker keeps its
# own batch-norm statistics and the server-held model is evaluated with their average
# (runner/ps/worker_buffers.h; bsp against dense all-reduce, bitwise: tests/unit/ps_batchnorm_test.cpp):
#  - bsp with 1 server and 2 workers, stopped by SIGTERM after round 5 (CEDAR_HOLD_AFTER_STEP),
#    writes its checkpoint at round 6 and `cedar run --resume` continues it to exactly the records
#    of the uninterrupted run, bitwise: both evaluations (rounds 8 and 16) come after the resume
#    and read the workers' statistics, so each worker's checkpoint must carry its own;
#  - ssp with 2 servers and asp with 1 (plain SGD steps at lr 0.2, the setting tests/e2e/ps_test.sh
#    gives asynchronous runs) complete their 2 x 16 updates, and the training loss of the second
#    epoch's updates (recorded with the evaluation at update 32) is under half the first epoch's
#    (at update 16): measured 0.08-0.32 against 1.9-2.7; and the final model, evaluated with the
#    workers' averaged statistics, classifies the test images well above chance (0.96-1.0 measured;
#    0.34 with the statistics left at their initial values).
# Usage: ps_batchnorm_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"
WORK=$(mktemp -d /tmp/cedar-e2e-psbn.XXXXXX)
DB="$WORK/psbn.db"
trap 'rm -rf "$WORK"' EXIT

# 256 images / (2 workers x 16) = 8 rounds per epoch.
cat > "$WORK/psbn.yaml" <<YAML
name: psbn
suite: e2e
model: {name: resnet20}
data: {name: synthetic, train_limit: 256, test_limit: 128, image_size: 8, augment: false}
train: {epochs: 2, batch_size: 16, threads: 1, seed: 7, checkpoint_every_steps: 2}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
algorithm: {name: ps, mode: bsp}
YAML

run() {  # run NAME RANKS --set ...
  local name="$1" np="$2"; shift 2
  "${MPIRUN[@]}" -np "$np" "$CEDAR" run "$WORK/psbn.yaml" --db "$DB" --quiet --set name="$name" "$@" 2>&1
}
id_of() { q "SELECT id FROM runs WHERE name='$1'"; }

out=$(run bsp 3); rc=$?
check "bsp, ResNet-20: exits 0" equals "$rc" 0
[ "$rc" = 0 ] || echo "$out" | tail -n 20
B=$(id_of bsp)
check "bsp: completed with 2 workers and 1 server, 16 rounds, evaluated twice" equals \
  "$(q "SELECT status||','||workers||','||servers||','||(SELECT COUNT(*) FROM steps WHERE run_id=$B)||','||(SELECT COUNT(*) FROM evals WHERE run_id=$B) FROM runs WHERE id=$B")" \
  "completed,2,1,16,2"

sigterm_when_held 5 3 "$WORK/term.log" "${MPIRUN[@]}" -np 3 "$CEDAR" run "$WORK/psbn.yaml" \
    --db "$DB" --quiet --set name=term; rc=$?
T=$(id_of term)
check "SIGTERM after round 5: the job exits non-zero" greater "$rc" 0
check "SIGTERM: every rank stops at round 6 with a checkpoint there" equals \
  "$(q "SELECT status||': '||error FROM runs WHERE id=$T")" \
  "failed: interrupted by SIGTERM at update 6 (checkpoint written)"
check "SIGTERM: no evaluation before the stop" equals "$(q "SELECT COUNT(*) FROM evals WHERE run_id=$T")" 0
out=$(run term 3 --resume); rc=$?
check "--resume: completes run $T" equals "$rc,$(id_of term)" "0,$T"
check "--resume: the records of the uninterrupted run, evaluations included, bitwise" equals \
  "$(metrics "$DB" term | md5sum)" "$(metrics "$DB" bsp | md5sum)"

ASYNC=(--set optimizer.momentum=0 --set optimizer.lr=0.2 --set train.checkpoint=false)
for spec in "ssp 2 4" "asp 1 3"; do
  read -r mode servers np <<< "$spec"
  out=$(run "$mode" "$np" --set algorithm.mode="$mode" --set algorithm.servers="$servers" "${ASYNC[@]}"); rc=$?
  check "$mode, $servers server(s): exits 0" equals "$rc" 0
  [ "$rc" = 0 ] || echo "$out" | tail -n 20
  M=$(id_of "$mode")
  check "$mode: completed, 2 x 16 updates, evaluated at updates 16 and 32" equals \
    "$(q "SELECT status||','||(SELECT COUNT(*) FROM steps WHERE run_id=$M)||','||(SELECT GROUP_CONCAT(step) FROM evals WHERE run_id=$M) FROM runs WHERE id=$M")" \
    "completed,32,16,32"
  first=$(q "SELECT train_loss FROM evals WHERE run_id=$M AND step=16")
  second=$(q "SELECT train_loss FROM evals WHERE run_id=$M AND step=32")
  check "$mode: the second epoch's training loss ($second) is under half the first's ($first)" \
    greater "$(awk -v a="$first" 'BEGIN { print a / 2 }')" "$second"
  check "$mode: the final model with the averaged statistics scores > 0.8 (chance 0.1)" greater \
    "$(q "SELECT final_test_accuracy FROM runs WHERE id=$M")" 0.8
done
finish
