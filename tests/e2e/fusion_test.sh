#!/usr/bin/env bash
# End to end: train.fusion on 2 MPI ranks. Buckets grouped from the network model (mgwfbp,
# optimal, auto) cover every parameter exactly once and train dense SGD to the very losses of
# fixed-size buckets: on 2 ranks each gradient element's sum is one addition, a + b, whatever
# bucket carries it, so the runs agree bitwise. Backward's timing passes before the first step
# leave no trace (ResNet-20's batch-norm statistics reach its test loss). A run stopped by SIGTERM
# resumes with the buckets of its checkpoint, which its timeline shows it exchanging. Only what the
# code guarantees is asserted: which grouping the model picks depends on measured times.
# Usage: fusion_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-fusion.XXXXXX)
DB="$WORK/e2e.db"
trap 'rm -rf "$WORK"' EXIT

# 1024 images / (2 ranks x 32) = 16 steps of LeNet-5; fixed buckets of 0.02 MiB make 5 of them.
cat > "$WORK/lenet.yaml" <<YAML
name: fusion
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 1024, test_limit: 300}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 7, bucket_mb: 0.02, overlap: true,
        checkpoint_every_steps: 4}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
algorithm: {name: dense}
YAML

# What training computed, without the buckets: losses and accuracies of every step and evaluation.
losses() {  # losses RUN_NAME
  local id
  id=$(q "SELECT MAX(id) FROM runs WHERE name='$1'")
  q "SELECT step, train_loss, train_accuracy FROM steps WHERE run_id=$id ORDER BY step;
     SELECT step, test_loss, test_accuracy FROM evals WHERE run_id=$id ORDER BY step"
}
fusion_field() {  # fusion_field RUN_NAME JSON_PATH: from the run's provenance entry "fusion"
  q "SELECT json_extract(provenance, '\$.fusion$2') FROM runs WHERE id=(SELECT MAX(id) FROM runs WHERE name='$1')"
}
run2() { "${MPIRUN[@]}" -np 2 "$CEDAR" run "$@"; }

run2 "$WORK/lenet.yaml" --db "$DB" --quiet --set name=size > "$WORK/size.log" 2>&1
check "fixed buckets: the reference run completes" equals "$(q "SELECT status FROM runs WHERE name='size'")" completed
check "... 16 steps" equals "$(q "SELECT COUNT(*) FROM steps WHERE run_id=(SELECT id FROM runs WHERE name='size')")" 16
check "... records no fusion entry" equals "$(fusion_field size '')" ""

# LeNet-5's parameters: conv1 6x1x5x5 + 6, conv2 16x6x5x5 + 16, fc1 120x400 + 120, fc2 84x120 + 84,
# fc3 10x84 + 10 = 61,706 floats in 10 tensors, 246,824 bytes.
for mode in mgwfbp optimal auto; do
  run2 "$WORK/lenet.yaml" --db "$DB" --set name="$mode" --set train.fusion=$mode > "$WORK/$mode.log" 2>&1
  check "$mode: the run completes" equals "$(q "SELECT status FROM runs WHERE name='$mode'")" completed
  check "$mode: its buckets hold the 10 tensors" equals \
    "$(q "SELECT SUM(json_extract(value, '\$.tensors')) || ',' || (MIN(json_extract(value, '\$.tensors')) > 0)
          FROM json_each((SELECT json_extract(provenance, '\$.fusion.buckets') FROM runs WHERE name='$mode'))")" "10,1"
  check "$mode: ... and 246,824 bytes" equals \
    "$(q "SELECT SUM(json_extract(value, '\$.bytes'))
          FROM json_each((SELECT json_extract(provenance, '\$.fusion.buckets') FROM runs WHERE name='$mode'))")" 246824
  check "$mode: the log names the buckets and their predicted end" contains "$(cat "$WORK/$mode.log")" \
    "fusion $mode: $(fusion_field "$mode" '.buckets' | jq length) buckets (tensors "
  check "$mode: losses and accuracies equal the fixed buckets' bitwise" equals "$(losses "$mode")" "$(losses size)"
done
# auto's candidates: train.bucket_mb (0.02) and 1, 2, 4, ..., 64 MiB.
candidate() { awk -v v="$1" 'BEGIN { n = split("0.02 1 2 4 8 16 32 64", c, " ")
  for (i = 1; i <= n; ++i) if (v != "" && v + 0 == c[i] + 0) exit 0; exit 1 }'; }
check "auto records the bucket size it chose, a candidate ($(fusion_field auto .bucket_mb))" \
  candidate "$(fusion_field auto .bucket_mb)"
check "mgwfbp's log says where the times come from" contains "$(cat "$WORK/mgwfbp.log")" "timed on rank 0"
echo "       buckets: mgwfbp $(fusion_field mgwfbp .buckets | jq -c '[.[].tensors]'), optimal $(fusion_field optimal .buckets | jq -c '[.[].tensors]'), auto $(fusion_field auto .bucket_mb) MiB"

# Without overlap fusion changes the number of messages only.
run2 "$WORK/lenet.yaml" --db "$DB" --quiet --set name=plain-size --set train.overlap=false > /dev/null 2>&1
run2 "$WORK/lenet.yaml" --db "$DB" --quiet --set name=plain-mgwfbp --set train.overlap=false \
  --set train.fusion=mgwfbp > "$WORK/plain.log" 2>&1
check "overlap off: mgwfbp completes" equals "$(q "SELECT status FROM runs WHERE name='plain-mgwfbp'")" completed
check "overlap off: ... with the losses of fixed buckets" equals "$(losses plain-mgwfbp)" "$(losses plain-size)"

# Batch norm: the timing passes' forward changes running statistics, which must be put back (the
# test loss of the evaluation after the last step reads them).
cat > "$WORK/resnet.yaml" <<YAML
name: bn
suite: e2e
model: {name: resnet20}
data: {name: synthetic, train_limit: 256, test_limit: 64}
train: {epochs: 1, batch_size: 8, max_steps: 4, threads: 1, seed: 3, overlap: true, checkpoint: false}
optimizer: {lr: 0.05, schedule: constant}
algorithm: dense
YAML
run2 "$WORK/resnet.yaml" --db "$DB" --quiet --set name=bn-size > /dev/null 2>&1
run2 "$WORK/resnet.yaml" --db "$DB" --quiet --set name=bn-optimal --set train.fusion=optimal > /dev/null 2>&1
check "ResNet-20: optimal fusion completes" equals "$(q "SELECT status FROM runs WHERE name='bn-optimal'")" completed
check "ResNet-20: losses and test loss equal the fixed buckets'" equals "$(losses bn-optimal)" "$(losses bn-size)"

# Stopped by SIGTERM after step 6 (a checkpoint at the stop, step 7), resumed: the buckets are the
# checkpoint's, and steps 9-10 exchange exactly those.
sigterm_when_held 6 2 "$WORK/stop.log" "${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/lenet.yaml" --db "$DB" \
  --quiet --set name=resumed --set train.fusion=mgwfbp
check "SIGTERM: the mgwfbp run stops non-zero" greater "$?" 0
before=$(fusion_field resumed .buckets)
run2 "$WORK/lenet.yaml" --db "$DB" --set name=resumed --set train.fusion=mgwfbp --resume \
  --set train.trace="$WORK/resumed.json" --set train.trace_steps=9-10 > "$WORK/resumed.log" 2>&1
check "resume: the run completes" equals "$(q "SELECT status FROM runs WHERE name='resumed'")" completed
check "resume: the buckets come from the checkpoint of step 7" equals "$(fusion_field resumed .restored_from_step)" 7
check "... the log says so" contains "$(cat "$WORK/resumed.log")" "from the checkpoint of step 7"
check "... the same buckets as before the stop" equals "$(fusion_field resumed .buckets)" "$before"
check "... which steps 9 and 10 exchange" equals \
  "$(jq -c '[.traceEvents[] | select(.cat == "exchange" and .args.step == 9) | .args.elements * 4]' "$WORK/resumed.rank0.json")" \
  "$(jq -c '[.[].bytes]' <<< "$before")"
check "resume: losses equal the fixed buckets' run" equals "$(losses resumed)" "$(losses size)"

# A calibrated profile from a file (network.profiles): the fusion model costs the allreduce with
# the file's fit for allreduce at P = 2, the step rows with its default alpha and beta, and what
# the file holds is part of the run's fingerprint. A ring allreduce of n bytes on 2 ranks takes
# 2 latency steps and n bus bytes: startup 2 x 1e-4 s, 2e-8 s per byte.
write_profiles() {  # write_profiles ALPHA
  cat > "$WORK/profiles.yaml" <<YAML
networks:
  - name: vc-test
    alpha: $1
    beta: 4.0e-8
    measured_on: "hand-written for the test"
    collectives:
      allreduce: {2: {alpha: 1.0e-4, beta: 2.0e-8}}
YAML
}
write_profiles 2.0e-4
PROFILED=(--set network.profiles="$WORK/profiles.yaml" --set network.profile=vc-test)
run2 "$WORK/lenet.yaml" --db "$DB" --quiet --set name=profiled "${PROFILED[@]}" \
  --set train.fusion=mgwfbp > "$WORK/profiled.log" 2>&1
check "a profile from network.profiles: mgwfbp completes" equals "$(q "SELECT status FROM runs WHERE name='profiled'")" completed
check "... costing the allreduce with the file's fit at P = 2" equals \
  "$(fusion_field profiled .allreduce_startup_seconds),$(fusion_field profiled .allreduce_seconds_per_byte)" "0.0002,2.0e-08"
check "... every step's modeled seconds on the file's alpha and beta" equals "$(q "SELECT COUNT(*) || ',' ||
  SUM(ABS(modeled_comm_seconds - (2.0e-4 * latency_steps + 4.0e-8 * bus_bytes)) < 1e-12) FROM steps
  WHERE run_id = (SELECT id FROM runs WHERE name='profiled')")" "16,16"
check "... the run's record holds what the file held" contains \
  "$(q "SELECT config FROM runs WHERE name='profiled'")" "# network.profiles: $WORK/profiles.yaml held:"
hash_now() {  # a 2-step run with the profile file as it is now; prints its fingerprint
  run2 "$WORK/lenet.yaml" --db "$DB" --quiet --set name=fingerprint "${PROFILED[@]}" \
    --set train.max_steps=2 --set train.overlap=false > /dev/null 2>&1
  q "SELECT config_hash FROM runs WHERE id = (SELECT MAX(id) FROM runs WHERE name='fingerprint')"
}
first=$(hash_now)
write_profiles 3.0e-4
changed=$(hash_now)
write_profiles 2.0e-4
again=$(hash_now)
check "the fingerprint follows the file: changed with it" differs "$changed" "$first"
check "... and the same for the same file" equals "$again" "$first"
out=$("$CEDAR" run "$WORK/lenet.yaml" --db "$DB" --quiet --set network.profiles="$WORK/profiles.yaml" \
  --set network.profile=nope 2>&1)
check "a name the file lacks is refused, naming the key and the file" contains "$out" \
  "network.profile: unknown network profile 'nope'"
check "... and the file" contains "$out" "nor in $WORK/profiles.yaml"
out=$("$CEDAR" run "$WORK/lenet.yaml" --db "$DB" --quiet --set network.profile=vc-test 2>&1)
check "without network.profiles only built-in names are taken" contains "$out" "network.profile: 'vc-test' is not one of"

# Bad values name the key.
out=$("$CEDAR" run "$WORK/lenet.yaml" --db "$DB" --quiet --set train.fusion=greedy 2>&1)
check "an unknown grouping is refused, naming the key" contains "$out" "train.fusion: 'greedy' is not one of size|mgwfbp|optimal|auto"
out=$(run2 "$WORK/lenet.yaml" --db "$DB" --quiet --set algorithm.name=ps --set train.overlap=false \
  --set train.fusion=mgwfbp 2>&1)
check "the parameter server refuses it, naming the key" contains "$out" "train.fusion 'mgwfbp' is not supported with algorithm ps"

finish
