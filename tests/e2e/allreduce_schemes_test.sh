#!/usr/bin/env bash
# End to end: network.allreduce on 4 ranks, dense SGD on LeNet-5 / Fashion-MNIST, with the
# library's allreduce, a binary tree and two_level in emulated nodes of 2. Each completes and
# trains as the library's run does (the same sums up to rounding); the database holds the bytes
# each rank's messages carried (tree: rank 0 sends the result to its two children, a leaf only
# its vector up; two_level: a tree inside the node, a ring between the two leaders only); and
# `cedar project` costs the tree run as a tree.
# Usage: allreduce_schemes_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-allreduce.XXXXXX)
DB="$WORK/schemes.db"
trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

run_scheme() {  # run_scheme NAME SCHEME
  cat > "$WORK/$1.yaml" <<YAML
name: $1
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 1024, test_limit: 1000}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 7}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
network: {allreduce: $2, ranks_per_node: 2}
algorithm: dense
YAML
  local out
  out=$("${MPIRUN[@]}" -np 4 "$CEDAR" run "$WORK/$1.yaml" --db "$DB" --quiet 2>&1)
  check "cedar run with network.allreduce $2 exits 0" equals "$?" 0 || echo "$out"
}
run_scheme library library
run_scheme tree tree
run_scheme two two_level

check "three runs completed" equals "$(q "SELECT COUNT(*) FROM runs WHERE status = 'completed'")" 3
run() { q "SELECT id FROM runs WHERE name = '$1'"; }
# 1024 images / (4 ranks x 32) = 8 steps.
check "8 steps each" equals "$(q "SELECT DISTINCT COUNT(*) FROM steps GROUP BY run_id")" 8
# LeNet-5: n = 61,706 fp32 values allreduced per step.
n=61706
tree=$(run tree); two=$(run two); lib=$(run library)
per_step() { q "SELECT DISTINCT $2 FROM steps WHERE run_id = $1"; }
check "library: ring bus bytes, 2(P-1)/P x 4n" equals "$(per_step "$lib" bus_bytes)" $((6 * n))
check "tree: payload 4n per step" equals "$(per_step "$tree" payload_bytes)" $((4 * n))
check "tree: rank 0 sends 4n to each of its two children" equals "$(per_step "$tree" bus_bytes)" $((8 * n))
total() { q "SELECT bus_bytes FROM comm_totals WHERE run_id = $1 AND rank = $2 AND op = '$3'"; }
check "tree: rank 1 sends up once and down to rank 3" equals "$(total "$tree" 1 allreduce)" $((8 * 8 * n))
check "tree: leaves 2 and 3 send their vector up only" equals \
  "$(total "$tree" 2 allreduce),$(total "$tree" 3 allreduce)" "$((8 * 4 * n)),$((8 * 4 * n))"
level() { q "SELECT DISTINCT $2 FROM step_levels WHERE run_id = $two AND level = '$1'"; }
check "two_level: intra, nodes of 2 on shm" equals "$(level intra "ranks||','||profile")" "2,shm"
check "two_level: rank 0 sends 4n down its node" equals "$(level intra bus_bytes)" $((4 * n))
check "two_level: 2 leaders on 10gbe" equals "$(level inter "ranks||','||profile")" "2,10gbe"
check "two_level: a ring of 2 leaders sends 4n each" equals "$(level inter bus_bytes)" $((4 * n))
check "two_level: only the leaders (ranks 0 and 2) send between nodes" equals \
  "$(q "SELECT group_concat(rank) FROM (SELECT rank FROM comm_totals WHERE run_id = $two AND op = 'inter/allreduce' ORDER BY rank)")" "0,2"
check "two_level: rank 3 sends its vector up its node only" equals "$(total "$two" 3 intra/allreduce)" $((8 * 4 * n))
# The same sums in other orders: losses agree to rounding, accuracies to a test image or so.
diff_loss() { q "SELECT MAX(ABS(a.train_loss - b.train_loss)) FROM steps a JOIN steps b USING (step)
  WHERE a.run_id = $lib AND b.run_id = $1"; }
for r in tree two; do
  check "$r trains as the library's run (loss within 1e-3 at every step)" greater 1e-3 "$(diff_loss "$(run $r)")"
done
project=$("$CEDAR" project "$DB" --workers 8 2>&1)
check "cedar project names the tree run's scheme" contains "$project" "Allreduce scheme tree"
finish
