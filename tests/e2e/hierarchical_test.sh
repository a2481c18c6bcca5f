#!/usr/bin/env bash
# End to end: the hierarchical exchange under mpirun on 4 ranks emulating nodes of 2
# (network.ranks_per_node: 2), LeNet-5 on Fashion-MNIST: it learns, and the database holds each
# level's bytes per step as the formulas give them (dense inside a node, QSGD between the two
# leaders only), each level modeled on its own profile, which the level report and the
# projection read back.
# Usage: hierarchical_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-hier.XXXXXX)
DB="$WORK/hier.db"
trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

cat > "$WORK/hier.yaml" <<YAML
name: hier
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 4096, test_limit: 1000}
train: {epochs: 2, batch_size: 32, threads: 1, seed: 7}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
network: {ranks_per_node: 2, intra_profile: shm, profile: 10gbe}
algorithm: {name: hierarchical, inter: {name: qsgd, bits: 4}}
YAML

out=$("${MPIRUN[@]}" -np 4 "$CEDAR" run "$WORK/hier.yaml" --db "$DB" --quiet 2>&1)
check "cedar run exits 0 on 4 ranks" equals "$?" 0 || echo "$out"
check "run completed" equals "$(q "SELECT status||','||world_size FROM runs")" "completed,4"
# 4096 images / (4 ranks x 32) = 32 steps per epoch, 2 epochs.
check "64 steps" equals "$(q "SELECT COUNT(*) FROM steps")" 64
check "accuracy well above chance (10%)" greater "$(q "SELECT final_test_accuracy FROM runs")" 0.5

# LeNet-5's tensors: conv1 6x1x5x5 + 6, conv2 16x6x5x5 + 16, fc 120x400 + 120, 84x120 + 84,
# 10x84 + 10: n = 61,706 fp32 values.
n=61706
sizes="150 6 2400 16 48000 120 10080 84 840 10"
# QSGD (4 bits, buckets of 512): per tensor of m values 4 ceil(m/512) + ceil(5m/8) bytes.
qsgd=0
for m in $sizes; do qsgd=$((qsgd + 4 * ((m + 511) / 512) + (5 * m + 7) / 8)); done
level() { q "SELECT DISTINCT $2 FROM step_levels WHERE level = '$1'"; }
# Rank 0 leads node 0: inside it, an allreduce (payload 4n, bus 2(2-1)/2 x 4n) and its broadcast
# (payload and bus 4n) per step.
check "intra: 2 ranks per node, on shm" equals "$(level intra "ranks||','||profile")" "2,shm"
check "intra payload per step = 4n + 4n" equals "$(level intra payload_bytes)" $((8 * n))
check "intra bus per step = 2(R-1)/R 4n + 4n" equals "$(level intra bus_bytes)" $((8 * n))
check "inter: 2 leaders, on 10gbe" equals "$(level inter "ranks||','||profile")" "2,10gbe"
check "inter payload per step = QSGD's encodings" equals "$(level inter payload_bytes)" "$qsgd"
check "inter bus per step = (N-1)/N x N encodings" equals "$(level inter bus_bytes)" "$qsgd"
check "the step's bytes are the two levels'" equals "$(q "SELECT DISTINCT payload_bytes FROM steps")" $((8 * n + qsgd))
check "only the leaders (ranks 0 and 2) send between nodes" equals \
  "$(q "SELECT group_concat(rank) FROM (SELECT DISTINCT rank FROM comm_totals WHERE op LIKE 'inter/%' ORDER BY rank)")" "0,2"
check "non-leaders send n per step inside the node (allreduce only)" equals \
  "$(q "SELECT SUM(payload_bytes) FROM comm_totals WHERE rank = 1 AND op LIKE 'intra/%'")" $((64 * 4 * n))
# Each level's modeled time on its own profile: shm 0.5 us + 1e-10 s/B, 10gbe 20 us + 8e-10 s/B.
check "intra modeled on shm" equals "$(q "SELECT COUNT(*) FROM step_levels WHERE level = 'intra' AND
  abs(modeled_comm_seconds - (latency_steps * 0.5e-6 + bus_bytes * 1e-10)) > 1e-12")" 0
check "inter modeled on 10gbe" equals "$(q "SELECT COUNT(*) FROM step_levels WHERE level = 'inter' AND
  abs(modeled_comm_seconds - (latency_steps * 20e-6 + bus_bytes * 8e-10)) > 1e-12")" 0
check "the step's modeled time is the levels' sum" equals "$(q "SELECT COUNT(*) FROM steps s WHERE
  abs(s.modeled_comm_seconds - (SELECT SUM(l.modeled_comm_seconds) FROM step_levels l
  WHERE l.run_id = s.run_id AND l.step = s.step)) > 1e-12")" 0

# Each level's measured seconds (rank 0 inside that level's communicators): recorded on every
# step, and together within the step's own seconds inside the communicator.
check "every level row has its measured seconds" equals \
  "$(q "SELECT COUNT(*) FROM step_levels WHERE comm_seconds IS NULL OR comm_seconds <= 0")" 0
check "the levels' seconds lie within the step's comm seconds" equals "$(q "SELECT COUNT(*) FROM
  steps s WHERE (SELECT SUM(l.comm_seconds) FROM step_levels l WHERE l.run_id = s.run_id AND
  l.step = s.step) > s.comm_seconds + 1e-9")" 0

report=$("$CEDAR" report "$DB" --levels 2>&1)
check "cedar report --levels: intra row per step" contains "$report" \
  "| hier | hierarchical | 4 | 7 | intra | 2 | shm | $(awk -v b=$((8 * n)) 'BEGIN { printf "%.4f", b / 1e6 }') |"
project=$("$CEDAR" project "$DB" --workers 8 2>&1)
check "cedar project costs each level" contains "$project" "Level intra (2 ranks per group at 4 ranks, recorded on shm)"
finish
