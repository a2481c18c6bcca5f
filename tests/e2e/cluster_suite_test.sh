#!/usr/bin/env bash
# End to end: `cedar suite` with network.cluster: virtual runs dense SGD (LeNet-5, 4 steps) on
# 2 virtual hosts x 1 rank: the run completes, its bus bytes per step are a ring allreduce's
# 2(P-1)/P x 4 x parameters, that traffic crossed the shaped link into host 1 (its veth's counter),
# and the run's provenance, the suite's table note and `cedar report --provenance` say which links
# it was measured on. Runs that do not fit the cluster are refused before anything starts, and
# `cedar run` alone refuses the setting. Then 4 ranks on 2 hosts x 2 ranks (shared memory inside a
# host) complete too. Skips (77) where the machine cannot host a cluster.
# Usage: cluster_suite_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/cluster_lib.sh"
CEDAR="$1"
WORK=$(mktemp -d /tmp/cedar-e2e-cluster.XXXXXX)
DB="$WORK/vc.db"
trap '"$CEDAR" cluster down > /dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
need_cluster "$CEDAR"
cd "$WORK" || exit 1

cat > vc.yaml <<YAML
name: vc
suite: vc
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 256, test_limit: 100}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 3, checkpoint: false}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
network: {cluster: virtual}
algorithm: dense
grid:
  world_size: [2]
YAML

out=$("$CEDAR" suite vc.yaml --db "$DB" 2>&1)
check "no cluster up: the suite is refused" greater "$?" 0
check "... saying how to start one" contains "$out" "no virtual cluster is up"
out=$("$CEDAR" cluster up --hosts 2 --ranks-per-host 1 --bandwidth 1gbit --burst 256kb 2>&1)
rc=$?
check "cluster up 2 x 1 at 1gbit" equals "$rc" 0
[ "$rc" = 0 ] || echo "$out"
out=$("$CEDAR" suite vc.yaml --db "$DB" --set network.ranks_per_node=2 2>&1)
check "ranks_per_node other than the cluster's: refused" contains "$out" \
  "network.ranks_per_node 2 differs from the cluster's 1 ranks per host"
sed 's/world_size: \[2\]/world_size: [3]/' vc.yaml > vc3.yaml
out=$("$CEDAR" suite vc3.yaml --db "$DB" 2>&1)
check "more ranks than slots: refused" contains "$out" "3 ranks do not fit on 2 hosts x 1 rank"
out=$("$CEDAR" run vc.yaml --db "$DB" 2>&1)
check "cedar run alone refuses network.cluster: virtual" contains "$out" "started by \`cedar suite\`"
check "the refused launches wrote no database" equals "$(ls "$DB" 2>&1 > /dev/null | grep -c 'No such file')" 1

into_h1() { cat /sys/class/net/cedar-v1/statistics/tx_bytes; }
tx0=$(into_h1)
out=$("$CEDAR" suite vc.yaml --db "$DB" --quiet 2>&1)
rc=$?
check "the suite on the cluster exits 0" equals "$rc" 0
[ "$rc" = 0 ] || echo "$out"
tx1=$(into_h1)
check "the run completed on 2 ranks" equals "$(q "SELECT status||','||world_size FROM runs")" "completed,2"
# 256 images / (2 ranks x 32) = 4 steps. LeNet-5's tensors: conv1 6x1x5x5 + 6, conv2 16x6x5x5 + 16,
# fc 120x400 + 120, 84x120 + 84, 10x84 + 10.
N=0
for n in 150 6 2400 16 48000 120 10080 84 840 10; do N=$((N + n)); done
check "LeNet-5 has 61706 parameters (the run's count)" equals "$(q "SELECT parameters FROM runs")" "$N"
P=2
check "4 steps" equals "$(q "SELECT COUNT(*) FROM steps")" 4
check "bus bytes per step = 2(P-1)/P x 4 x N" equals "$(q "SELECT DISTINCT bus_bytes FROM steps")" \
  $((2 * (P - 1) * 4 * N / P))
# Rank 0 on host 0 sends its half of the ring to rank 1 on host 1 through the shaped veth.
check "at least the run's bus bytes crossed the link into host 1" greater "$((tx1 - tx0))" \
  $((4 * 2 * (P - 1) * 4 * N / P / 2))
links=$(q "SELECT json_extract(provenance, '$.links') FROM runs")
check "provenance: 2 hosts" equals "$(q "SELECT json_extract(provenance, '$.links.hosts') FROM runs")" 2
check "provenance: 1 rank per host" equals "$(q "SELECT json_extract(provenance, '$.links.ranks_per_host') FROM runs")" 1
check "provenance: rate, burst, qdisc" equals \
  "$(q "SELECT json_extract(provenance, '$.links.rate')||','||json_extract(provenance, '$.links.burst')||','||json_extract(provenance, '$.links.qdisc') FROM runs")" \
  "1gbit,256kb,tbf"
note="Seconds measured on shaped links: virtual cluster 2x1, 1gbit full duplex per host (tbf, burst 256kb): dense (seed 3)"
check "the suite's table says where its seconds were measured" contains "$out" "$note"
check "cedar report --provenance says it too" contains "$("$CEDAR" report "$DB" --provenance 2>&1)" "$note"
[ -n "$links" ] || echo "       provenance: $(q "SELECT provenance FROM runs")"

# Two ranks per host: the ranks of a host share memory (Open MPI's vader), the hosts talk over the
# links. Every host has this machine's host name, /tmp and /dev/shm, so each must keep its own
# Open MPI session files and shared-memory segments, or ranks on two hosts take the same ones.
"$CEDAR" cluster down > /dev/null
out=$("$CEDAR" cluster up --hosts 2 --ranks-per-host 2 --bandwidth 1gbit --burst 256kb 2>&1)
check "cluster up 2 x 2 at 1gbit" equals "$?" 0
sed 's/world_size: \[2\]/world_size: [4]/' vc.yaml > vc4.yaml
out=$("$CEDAR" suite vc4.yaml --db "$WORK/vc4.db" --quiet 2>&1)
rc=$?
check "4 ranks on 2 hosts x 2 ranks: the suite exits 0" equals "$rc" 0
[ "$rc" = 0 ] || echo "$out" | tail -n 20
check "... the run completed on 4 ranks" equals \
  "$(sqlite3 "$WORK/vc4.db" "SELECT status||','||world_size FROM runs")" "completed,4"
check "each host kept its Open MPI files in its own folder" test -d /dev/shm/cedar-h0 -a \
  -d /dev/shm/cedar-h1
"$CEDAR" cluster down > /dev/null
check "cluster down removes the hosts' folders" test ! -e /dev/shm/cedar-h0 -a ! -e /dev/shm/cedar-h1
finish
