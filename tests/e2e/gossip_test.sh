#!/usr/bin/env bash
# End to end: the gossip algorithms D-PSGD and CHOCO-SGD (sign compression) through `cedar run` on
# real Fashion-MNIST with LeNet-5 on 4 MPI ranks (a ring: two neighbours each), checked through the
# database: the averaged model learns, every evaluation logs a finite, positive consensus distance,
# the bytes per step follow the algorithms' formulas from LeNet-5's shapes, and nothing but
# point-to-point messages is sent.
# Usage: gossip_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-gossip.XXXXXX)
DB="$WORK/gossip.db"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/gossip.yaml" <<YAML
name: gossip
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 4096, test_limit: 1000}
train: {epochs: 2, batch_size: 32, threads: 1, seed: 3, evals_per_epoch: 2}
optimizer: {lr: 0.05, momentum: 0.9, schedule: constant, weight_decay: 0}
algorithm: dpsgd
YAML

# LeNet-5 on 1x28x28 images, its tensors' sizes in model order (weight, bias per layer).
SIZES=(150 6 2400 16 48000 120 10080 84 840 10)
MODEL=0; SIGN=0
for n in "${SIZES[@]}"; do
  MODEL=$((MODEL + n))
  SIGN=$((SIGN + 4 + (n + 7) / 8))  # scaled sign: a fp32 scale and one bit per value
done
check "LeNet-5 has 61,706 parameters" equals "$MODEL" 61706

for alg in dpsgd choco-sgd; do
  out=$("${MPIRUN[@]}" -np 4 "$CEDAR" run "$WORK/gossip.yaml" --db "$DB" --set name="$alg" \
      --set algorithm="$alg" 2>&1)
  check "$alg: cedar run exits 0 on 4 ranks" equals "$?" 0
  id=$(q "SELECT id FROM runs WHERE name='$alg'")
  check "$alg: run completed" equals "$(q "SELECT status FROM runs WHERE id=$id")" completed
  # 4096 images / (4 ranks x 32) = 32 steps per epoch.
  check "$alg: one row per step" equals "$(q "SELECT COUNT(*) FROM steps WHERE run_id=$id")" 64
  check "$alg: the averaged model learns (accuracy > 50%, chance 10%)" greater \
    "$(q "SELECT final_test_accuracy FROM runs WHERE id=$id")" 0.5
  check "$alg: 4 evaluations, each with a consensus distance" equals \
    "$(q "SELECT COUNT(*) FROM evals WHERE run_id=$id AND consensus_distance > 0 AND consensus_distance < 1e30")" 4
  check "$alg: the consensus distance is printed" contains "$out" "consensus distance"
  check "$alg: only point-to-point messages" equals \
    "$(q "SELECT group_concat(DISTINCT op) FROM comm_totals WHERE run_id=$id")" sendrecv
done

# D-PSGD: each rank sends its fp32 model to its 2 ring neighbours, one sendrecv each (one bucket).
check "dpsgd: payload per step = 2 neighbours x 4 bytes x 61,706" equals \
  "$(q "SELECT DISTINCT payload_bytes FROM steps JOIN runs r ON r.id = run_id WHERE r.name='dpsgd'")" $((2 * 4 * MODEL))
check "dpsgd: two messages per step" equals \
  "$(q "SELECT DISTINCT latency_steps FROM steps JOIN runs r ON r.id = run_id WHERE r.name='dpsgd'")" 2
# CHOCO-SGD: the sign codec's bytes of every tensor, to each of the 2 neighbours.
check "choco-sgd: payload per step = 2 x sum(4 + ceil(n/8)) = 2 x $SIGN" equals \
  "$(q "SELECT DISTINCT payload_bytes FROM steps JOIN runs r ON r.id = run_id WHERE r.name='choco-sgd'")" $((2 * SIGN))
check "choco-sgd: every rank sent the same" equals \
  "$(q "SELECT COUNT(DISTINCT payload_bytes) || ',' || MIN(payload_bytes) FROM comm_totals c JOIN runs r ON r.id = run_id WHERE r.name='choco-sgd'")" \
  "1,$((64 * 2 * SIGN))"

# D-PSGD exchanges per bucket on the communication thread with train.overlap: small buckets (several
# per step) and overlap on or off change when the models travel, never what is computed (2048
# images / (4 ranks x 32) = 16 steps).
for ov in false true; do
  "${MPIRUN[@]}" -np 4 "$CEDAR" run "$WORK/gossip.yaml" --db "$DB" --quiet --set name="ov-$ov" \
    --set train.epochs=1 --set data.train_limit=2048 --set train.overlap=$ov --set train.bucket_mb=0.05 \
    > /dev/null 2>&1
done
steps_of() { q "SELECT s.step, s.train_loss, s.payload_bytes FROM steps s JOIN runs r ON r.id = s.run_id
                WHERE r.name = '$1' ORDER BY s.step" | md5sum; }
check "dpsgd with overlap: the same losses and bytes, bitwise" equals "$(steps_of ov-true)" "$(steps_of ov-false)"
check "... in 16 steps" equals "$(q "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'ov-true'")" 16
buckets=$(q "SELECT DISTINCT latency_steps / 2 FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'ov-true'")
check "... over several buckets (two messages each: $buckets buckets)" greater "$buckets" 1
check "... still 2 x the model's bytes per step" equals \
  "$(q "SELECT DISTINCT payload_bytes FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'ov-true'")" $((2 * 4 * MODEL))
finish
