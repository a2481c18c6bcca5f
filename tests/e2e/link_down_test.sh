#!/usr/bin/env bash
# End to end: a link that dies mid-run does not hang it. `cedar suite` trains dense SGD (LeNet-5,
# endless epochs) on 2 virtual hosts x 1 rank with network.collective_timeout_s: 5; once the
# database holds step 5, host 1's link goes down (`ip link set eth0 down` inside its namespace).
# The run must then end by itself: marked failed with an error naming the operation, its bytes,
# a rank and a step at or after the one reached, the step rows written before kept, and every
# rank gone; `cedar cluster down` then leaves the machine as it was. Nothing here waits for a
# time: the link is cut after a step the database shows, and the run's end is awaited (the bound
# below only keeps a hang from outliving the test). Skips (77) where the machine cannot host a
# cluster.
# Usage: link_down_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/cluster_lib.sh"
CEDAR="$1"
WORK=$(mktemp -d /tmp/cedar-e2e-link-down.XXXXXX)
DB="$WORK/ld.db"
K=5
job=""
# Whatever happens, nothing of the run outlives the test: the suite is started by setsid, so it
# and what it starts (mpirun, its daemons, the ranks) carry the suite's pid as their sid; those
# processes are killed here by pid.
end_launch() {
  local pid
  for pid in $(ps -o pid= -s "$job" | tr -d ' '); do kill -KILL "$pid" 2>/dev/null; done
}
cleanup() {
  [ -n "$job" ] && end_launch
  "$CEDAR" cluster down > /dev/null 2>&1
  [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
need_cluster "$CEDAR"
before=$(machine_net)
cd "$WORK" || exit 1

cat > ld.yaml <<YAML
name: ld
suite: ld
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 256, test_limit: 100}
train: {epochs: 100000, batch_size: 32, threads: 1, seed: 3, checkpoint: false}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
network: {cluster: virtual, collective_timeout_s: 5}
algorithm: dense
grid:
  world_size: [2]
YAML

out=$("$CEDAR" cluster up --hosts 2 --ranks-per-host 1 --bandwidth 1gbit --burst 256kb 2>&1)
rc=$?
check "cluster up 2 x 1 at 1gbit" equals "$rc" 0
[ "$rc" = 0 ] || { echo "$out"; finish; exit 1; }

setsid "$CEDAR" suite ld.yaml --db "$DB" --quiet > suite.log 2>&1 &
job=$!
# Step rows are committed every few steps: wait until one at or after step K is in the database
# (read-only: the suite creates the database).
reached=""
while kill -0 "$job" 2>/dev/null; do
  [ -s "$DB" ] && reached=$(sqlite3 -readonly "$DB" "SELECT MAX(step) FROM steps" 2>/dev/null)
  [ -n "$reached" ] && [ "$reached" -ge "$K" ] && break
  sleep 0.1
done
check "the run wrote step $K while its links were up" greater "${reached:-0}" $((K - 1))
[ "${reached:-0}" -ge "$K" ] || { tail -20 suite.log; finish; exit 1; }
# The ranks: `cedar run` processes started by the suite (sid: the suite's pid).
ranks() { ps -o pid=,args= -s "$job" | awk '$3 == "run" && $4 == "ld.yaml"' | wc -l; }
check "both ranks are running" equals "$(ranks)" 2
ip netns exec cedar-h1 ip link set eth0 down
check "host 1's link is down" contains "$(ip -n cedar-h1 link show eth0)" "state DOWN"

# The watchdog's limit (5 s) plus MPI_Abort's grace (10 s) bound the run's end; the test's 70th
# second only keeps a hang from outliving the test (ctest's limit is 90 s). Awaited: the record
# leaves 'running', and no rank is left.
while [ "$(sqlite3 -readonly "$DB" "SELECT status FROM runs")" = running ] && [ "$SECONDS" -lt 70 ]; do
  sleep 0.2
done
while [ "$(ranks)" -gt 0 ] && [ "$SECONDS" -lt 70 ]; do sleep 0.2; done
check "the run is marked failed" equals "$(q "SELECT status FROM runs")" failed
check "every rank ended" equals "$(ranks)" 0
error=$(q "SELECT error FROM runs")
check "the error says the limit ran out" contains "$error" "did not complete within 5 s"
named=$(echo "$error" | grep -cE '^rank [01]: [a-z_ /]+ of [0-9,]+ bytes( (to|from|with) [a-z0-9 ]+)? did not')
check "the error names a rank, the operation and its bytes" equals "$named" 1
echo "       the run's error: $error"
step=$(echo "$error" | sed -n 's/.*, in step \([0-9]*\)$/\1/p')
check "the error names a step at or after the one reached" greater "${step:--1}" $((reached - 1))
check "the step rows written before stay" greater "$(q "SELECT COUNT(*) FROM steps")" "$reached"
[ "$(q "SELECT status FROM runs")" = failed ] || tail -20 suite.log
# Open MPI's launcher may still wait for the daemon behind the dead link (its TCP connection
# gives up only after many minutes): what is left of the launch is ended here, by pid.
echo "       ending what is left of the launch: $(ps -o pid= -s "$job" | wc -l) process(es)"
end_launch
{ wait "$job"; } 2> /dev/null

out=$("$CEDAR" cluster down 2>&1)
check "cluster down exits 0" equals "$?" 0
check "down leaves namespaces, links and qdiscs as they were" equals "$(machine_net)" "$before"
finish
