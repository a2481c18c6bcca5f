#!/usr/bin/env bash
# End to end: a compressor written in Python (examples/script_topk.py, exported here with Cedar's
# venv Python) through `cedar run` on real Fashion-MNIST with LeNet-5 on 2 MPI ranks. The run
# completes and learns (test accuracy well above the 10% of chance), every step sends the bytes of
# top-k's wire format (k = ceil(d/100) int32 indices and fp32 values per tensor, one allgather),
# and it trains exactly as the built-in topk does (the same loss at every step: the updates are
# bitwise equal). A missing script and a script's own error stop `cedar run` with a message
# naming the file. Skipped (77) without the venv's Python or mpirun.
# Usage: script_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
py="${CEDAR_PYTHON:-$HOME/.cache/cedar/venv/bin/python}"
if [ ! -x "$py" ]; then
  echo "SKIP: no python at $py (Cedar's venv with PyTorch; set CEDAR_PYTHON)"
  exit 77
fi
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun is not installed"
  exit 77
fi
WORK=$(mktemp -d /tmp/cedar-e2e-script.XXXXXX)
DB="$WORK/script.db"
trap 'rm -rf "$WORK"' EXIT

"$py" "$SRC/examples/script_topk.py" "$WORK/topk.pt" 2>"$WORK/export.log"
check "the example exports" test -s "$WORK/topk.pt" || cat "$WORK/export.log"

cat > "$WORK/script.yaml" <<YAML
name: e2e-script
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 8192, test_limit: 1000}
train: {epochs: 2, batch_size: 16, threads: 1, seed: 5}
optimizer: {lr: 0.05, momentum: 0.9, schedule: constant, weight_decay: 0}
algorithm: {name: script, path: $WORK/topk.pt, ratio: 0.01, error_feedback: true}
YAML

# LeNet-5 on 1x28x28: conv1 6x1x5x5 + 6, conv2 16x6x5x5 + 16, fc1 120x400 + 120, fc2 84x120 + 84,
# fc3 10x84 + 10; k = ceil(0.01 d) per tensor, 8 bytes each (int32 index, fp32 value).
K=0
for d in 150 6 2400 16 48000 120 10080 84 840 10; do K=$((K + (d + 99) / 100)); done
check "K = 622 entries per step" equals "$K" 622
steps=$((2 * 8192 / (2 * 16)))  # 2 epochs on 2 ranks

out=$("${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/script.yaml" --db "$DB" --quiet 2>&1)
check "scripted top-k: cedar run exits 0" equals "$?" 0 || echo "$out" | tail -20
run="(SELECT id FROM runs WHERE name = 'e2e-script')"
check "completed, $steps steps on 2 ranks" equals \
  "$(q "SELECT status||','||world_size||','||(SELECT COUNT(*) FROM steps WHERE run_id = $run) FROM runs WHERE id = $run")" \
  "completed,2,$steps"
check "payload per step = 8 K (the script's tensors)" equals \
  "$(q "SELECT DISTINCT payload_bytes FROM steps WHERE run_id = $run")" $((8 * K))
check "bus bytes per step = (P-1)/P of the 2 x 8 K gathered" equals \
  "$(q "SELECT DISTINCT bus_bytes FROM steps WHERE run_id = $run")" $((8 * K))
check "one allgather per step on each rank, nothing else" equals \
  "$(q "SELECT group_concat(op||':'||calls||':'||payload_bytes, ' ') FROM comm_totals WHERE run_id = $run")" \
  "allgather:$steps:$((steps * 8 * K)) allgather:$steps:$((steps * 8 * K))"
check "the script's bytes are recorded as its stat" equals \
  "$(q "SELECT DISTINCT value FROM step_stats WHERE run_id = $run AND key = 'script.payload_bytes'")" \
  "$((8 * K)).0"
check "accuracy well above chance (10%)" greater \
  "$(q "SELECT final_test_accuracy FROM runs WHERE id = $run")" 0.5

out=$("${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/script.yaml" --db "$DB" --quiet \
  --set name=e2e-builtin --set algorithm='{name: topk, ratio: 0.01}' 2>&1)
check "built-in top-k: cedar run exits 0" equals "$?" 0 || echo "$out" | tail -20
losses() { q "SELECT group_concat(train_loss, ' ') FROM (SELECT train_loss FROM steps WHERE run_id = (SELECT id FROM runs WHERE name = '$1') ORDER BY step)"; }
check "the scripted and the built-in top-k train alike, step by step" equals \
  "$(losses e2e-script)" "$(losses e2e-builtin)"
check "and reach the same accuracy" equals \
  "$(q "SELECT COUNT(DISTINCT final_test_accuracy) FROM runs WHERE name IN ('e2e-script', 'e2e-builtin')")" 1

out=$("$CEDAR" run "$WORK/script.yaml" --db "$DB" --quiet --set algorithm.path="$WORK/none.pt" 2>&1)
check "a missing script: cedar run fails" greater "$?" 0
check "and names the file" contains "$out" "algorithm.path: script $WORK/none.pt: no such file"
out=$("$CEDAR" run "$WORK/script.yaml" --db "$DB" --quiet --set algorithm.ratio=2 2>&1)
check "a script's own error: cedar run fails" greater "$?" 0
line=$(grep -n 'raise ValueError("ratio must' "$SRC/examples/script_topk.py" | cut -d: -f1)
check "and names the .pt and the Python line" contains "$out" \
  "script $WORK/topk.pt: configure failed at $SRC/examples/script_topk.py:$line (in configure): builtins.ValueError: ratio must be in (0, 1]"

finish
