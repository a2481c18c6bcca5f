#!/usr/bin/env bash
# End to end: LAG in its own setting (experiments/lag_convex.yaml, reduced): full-batch least
# squares on 4 ranks over synthetic-regression's growing smoothness constants, gradient descent
# (dense) against LAG-WK, checked through the database:
#  - both runs reach the target gap f - f* <= 1e-8 and stop there (step stat gap_reached), the
#    gap recorded at every step and above 1e-8 before;
#  - LAG skipped uploads: its uploads over all steps are fewer than workers x steps, and fewer
#    rounds than gradient descent's reach the gap;
#  - full batch with a minibatch data set, shards unequal to the ranks, and the parameter server
#    are refused naming the key.
# Usage: lag_convex_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-lag-convex.XXXXXX)
DB="$WORK/lag.db"
trap 'rm -rf "$WORK"' EXIT

# 4 shards of 20 x 20: L = (3 + (1 + 1.3^3)^2) / 80 = 0.165, stepsize 1/L = 6.05.
cat > "$WORK/convex.yaml" <<YAML
name: gd
suite: e2e
model: {name: linear}
data: {name: synthetic-regression, task: linear, shards: 4, features: 20}
train: {full_batch: true, batch_size: 20, epochs: 1000, target_gap: 1.0e-8, threads: 1,
        checkpoint: false, seed: 3}
optimizer: {lr: 6.0, momentum: 0, weight_decay: 0, schedule: constant}
algorithm: dense
YAML

for alg in dense lag; do
  out=$("${MPIRUN[@]}" -np 4 "$CEDAR" run "$WORK/convex.yaml" --db "$DB" --quiet \
        --set algorithm=$alg --set name=$alg 2>&1)
  check "$alg: cedar run exits 0 on 4 ranks" equals "$?" 0
done
id() { q "SELECT MAX(id) FROM runs WHERE name='$1'"; }
GD=$(id dense); LAG=$(id lag)
steps() { q "SELECT COUNT(*) FROM steps WHERE run_id=$1"; }
reached() { q "SELECT MIN(step) FROM step_stats WHERE run_id=$1 AND key='gap_reached'"; }
for run in $GD $LAG; do
  check "run $run completed" equals "$(q "SELECT status FROM runs WHERE id=$run")" completed
  check "run $run records the gap at every step" \
    equals "$(q "SELECT COUNT(*) FROM step_stats WHERE run_id=$run AND key='gap'")" "$(steps $run)"
  check "run $run stops at the step that reached the gap" equals "$(reached $run)" "$(( $(steps $run) - 1 ))"
  check "run $run: that gap is at most 1e-8" \
    equals "$(q "SELECT value <= 1e-8 FROM step_stats WHERE run_id=$run AND key='gap' AND step=$(reached $run)")" 1
  check "run $run: the gap before it was above 1e-8" \
    equals "$(q "SELECT MIN(value) > 1e-8 FROM step_stats WHERE run_id=$run AND key='gap' AND step<$(reached $run)")" 1
done
lag_uploads=$(q "SELECT SUM(value) FROM step_stats WHERE run_id=$LAG AND key='uploads'")
check "LAG skipped uploads: $lag_uploads < 4 workers x $(steps $LAG) steps" \
  greater "$(( 4 * $(steps $LAG) ))" "$lag_uploads"
lag_rounds=$(q "SELECT SUM(value) FROM step_stats WHERE run_id=$LAG AND key='uploads' AND step<$(reached $LAG)")
gd_rounds=$(( 4 * $(reached $GD) ))
check "LAG reaches the gap in fewer rounds ($lag_rounds) than gradient descent ($gd_rounds)" \
  greater "$gd_rounds" "$lag_rounds"

out=$("$CEDAR" run "$WORK/convex.yaml" --db "$DB" --quiet --set data.name=fashion-mnist --set model.name=lenet5 2>&1)
check "full batch on minibatch data refused" contains "$out" "train.full_batch"
out=$("${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/convex.yaml" --db "$DB" --quiet 2>&1)
check "shards unequal to the ranks refused" contains "$out" "data.shards is 4 and there are 2 ranks"
out=$("$CEDAR" run "$WORK/convex.yaml" --db "$DB" --quiet --set algorithm=ps 2>&1)
check "the parameter server refused" contains "$out" "algorithm ps"
finish
