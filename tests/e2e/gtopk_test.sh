#!/usr/bin/env bash
# End to end: gTop-k (Shi et al., ICDCS 2019) through `cedar run` on real Fashion-MNIST with
# LeNet-5 on 4 and 8 MPI ranks: the run learns (test accuracy well above the 10% of chance) and
# every step's bytes equal the formula: log2 P rounds of one message of 8 bytes (int32 index,
# fp32 value) per entry, K = sum over LeNet-5's tensors of ceil(density * d) entries. About 20 s
# per run on 2 busy cores (dense SGD reaches 0.8 in this setting; gTop-k 0.64-0.76 over seeds).
# Usage: gtopk_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-gtopk.XXXXXX)
DB="$WORK/gtopk.db"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/gtopk.yaml" <<YAML
name: e2e-gtopk
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 16384, test_limit: 1000}
train: {epochs: 2, batch_size: 16, threads: 1, seed: 3}
optimizer: {lr: 0.05, momentum: 0.9, schedule: constant, weight_decay: 0}
algorithm: {name: gtopk, density: 0.01, warmup_epochs: 0}
YAML

# LeNet-5 on 1x28x28 (padding 2): conv1 6x1x5x5 + 6, conv2 16x6x5x5 + 16, fc1 120x400 + 120,
# fc2 84x120 + 84, fc3 10x84 + 10 (61,706 values); k = ceil(0.01 d) per tensor.
K=0
for d in 150 6 2400 16 48000 120 10080 84 840 10; do K=$((K + (d + 99) / 100)); done
check "K = 622 entries per message" equals "$K" 622

for n in 4 8; do
  rounds=$(( n == 4 ? 2 : 3 ))
  steps=$(( 2 * 16384 / (n * 16) ))   # 2 epochs
  out=$("${MPIRUN[@]}" -np $n "$CEDAR" run "$WORK/gtopk.yaml" --db "$DB" --quiet --set name=gtopk-$n 2>&1)
  rc=$?
  check "$n ranks: cedar run exits 0" equals "$rc" 0 || echo "$out" | tail -20
  run="(SELECT id FROM runs WHERE name = 'gtopk-$n')"
  check "$n ranks: completed, $steps steps" equals \
    "$(q "SELECT status||','||world_size||','||(SELECT COUNT(*) FROM steps WHERE run_id = $run) FROM runs WHERE id = $run")" \
    "completed,$n,$steps"
  check "$n ranks: payload per step = log2 P x 8 x K" equals \
    "$(q "SELECT DISTINCT payload_bytes FROM steps WHERE run_id = $run")" $((rounds * 8 * K))
  check "$n ranks: bus bytes per step = payload (point to point)" equals \
    "$(q "SELECT DISTINCT bus_bytes FROM steps WHERE run_id = $run")" $((rounds * 8 * K))
  check "$n ranks: every rank sends the same" equals \
    "$(q "SELECT DISTINCT payload_bytes_all FROM steps WHERE run_id = $run")" $((n * rounds * 8 * K))
  # One bucket per step (LeNet-5's 247 KB of gradients fit train.bucket_mb's 25 MiB).
  check "$n ranks: one sendrecv per round per step on every rank" equals \
    "$(q "SELECT COUNT(*)||','||SUM(calls)||','||SUM(payload_bytes) FROM comm_totals WHERE run_id = $run AND op = 'sendrecv'")" \
    "$n,$((n * steps * rounds)),$((n * steps * rounds * 8 * K))"
  check "$n ranks: accuracy well above chance (10%)" greater \
    "$(q "SELECT final_test_accuracy FROM runs WHERE id = $run")" 0.5
done

finish
