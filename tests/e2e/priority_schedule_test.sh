#!/usr/bin/env bash
# End to end: train.schedule: priority on 4 ranks, dense SGD on LeNet-5 / Fashion-MNIST with
# train.overlap and the tree allreduce, whose sum of each element follows the tree whatever the
# element's place in the buffer, beside the same run under fifo. The priority run trains bitwise as
# the fifo run does; its bytes are the fifo run's plus one ready bitmap per rank and round of
# negotiation; each rank's timeline shows the slices exchanged in the same order on every rank,
# each the first in priority order among the slices ready on every rank when the ranks took their
# ready sets (from the ranks' own ready times, not from what the negotiation reported); and
# algorithms whose exchange is not elementwise are refused. Only orders the code guarantees are
# asserted, never durations.
# Usage: priority_schedule_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-priority.XXXXXX)
DB="$WORK/priority.db"
trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

# LeNet-5's buckets of at most 0.02 MiB (tests/e2e/timeline_test.sh): 934, 10080, 120, 48000 and
# 2572 values. Slices of 16 kB = 4000 values: 1 + 3 + 1 + 12 + 1 = 18, so each round's bitmap is
# ceil(18 / 8) = 3 bytes per rank.
cat > "$WORK/lenet.yaml" <<YAML
name: lenet
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 1024, test_limit: 500}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 7, bucket_mb: 0.02, overlap: true}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
network: {allreduce: tree}
algorithm: dense
YAML

run4() {  # run4 NAME --set ...
  local name=$1; shift
  "${MPIRUN[@]}" -np 4 "$CEDAR" run "$WORK/lenet.yaml" --db "$DB" --quiet --set name="$name" "$@" \
    > "$WORK/$name.log" 2>&1
}
run4 fifo
check "fifo run exits 0" equals "$?" 0 || cat "$WORK/fifo.log"
run4 priority --set train.schedule=priority --set train.slice_kb=16 \
  --set train.trace="$WORK/p.json" --set train.trace_steps=2-5
check "priority run exits 0" equals "$?" 0 || cat "$WORK/priority.log"

fifo=$(q "SELECT id FROM runs WHERE name = 'fifo'")
prio=$(q "SELECT id FROM runs WHERE name = 'priority'")
# 1024 images / (4 ranks x 32) = 8 steps.
check "8 steps each" equals "$(q "SELECT COUNT(*) FROM steps WHERE run_id IN ($fifo, $prio)")" 16
check "18 slices each step" equals \
  "$(q "SELECT DISTINCT CAST(value AS INTEGER) FROM step_stats WHERE run_id = $prio AND key = 'schedule_slices'")" 18
same() {  # same TABLE COLUMNS: rows of the two runs equal (text comparison of the stored values)
  q "SELECT COUNT(*) FROM $1 a JOIN $1 b USING (step) WHERE a.run_id = $fifo AND b.run_id = $prio
     AND $(sed -E 's/([a-z_]+)/a.\1 IS b.\1/g; s/,/ AND/g' <<< "$2")"
}
check "bitwise the fifo run's losses and accuracies at every step" equals \
  "$(same steps "train_loss, train_accuracy")" 8
check "... and its evaluation" equals "$(same evals "test_loss, test_accuracy")" \
  "$(q "SELECT COUNT(*) FROM evals WHERE run_id = $fifo")"

# Bytes: the gradients' allreduce carries what fifo's does (tree payload 4 x 61,706 per step) in
# 18 collectives a step instead of 5; the ready bitmaps add 3 bytes per rank and round.
total() { q "SELECT COALESCE(SUM($3), 0) FROM comm_totals WHERE run_id = $1 AND op = '$2'"; }
check "gradient payload: fifo's, 4 x 61706 x 8 steps x 4 ranks" equals \
  "$(total "$prio" allreduce payload_bytes),$(total "$fifo" allreduce payload_bytes)" \
  "$((4 * 61706 * 8 * 4)),$((4 * 61706 * 8 * 4))"
check "18 slice allreduces a step instead of 5 buckets" equals \
  "$(total "$prio" allreduce calls),$(total "$fifo" allreduce calls)" "$((18 * 8 * 4)),$((5 * 8 * 4))"
rounds=$(q "SELECT CAST(SUM(value) AS INTEGER) FROM step_stats WHERE run_id = $prio AND key = 'schedule_rounds'")
check "a round per slice at least" greater "$rounds" $((18 * 8 - 1))
want=""
for r in 0 1 2 3; do want="${want:+$want,}$((3 * rounds))/$rounds"; done
check "control bytes: 3 per rank and round, in one allgather per round, on every rank" equals \
  "$(q "SELECT group_concat(v) FROM (SELECT payload_bytes || '/' || calls AS v FROM comm_totals
        WHERE run_id = $prio AND op = 'allgather' ORDER BY rank)")" "$want"
check "fifo sends no control bytes" equals "$(total "$fifo" allgather payload_bytes)" 0
check "each step's payload: fifo's plus 3 bytes per round" equals \
  "$(q "SELECT COUNT(*) FROM steps a JOIN steps b USING (step) JOIN step_stats s
        ON s.run_id = b.run_id AND s.step = b.step AND s.key = 'schedule_rounds'
        WHERE a.run_id = $fifo AND b.run_id = $prio AND b.payload_bytes = a.payload_bytes + 3 * s.value")" 8

# The timelines: the order on the wire against each rank's own ready times.
check_order() {
  python3 - "$WORK"/p.rank*.json <<'PY'
import json, sys
def fail(msg):
    print("       " + msg); sys.exit(1)
ranks = []
for path in sys.argv[1:]:
    ev = [e for e in json.load(open(path))["traceEvents"] if e["ph"] == "X"]
    ranks.append(ev)
if len(ranks) != 4: fail("%d trace files" % len(ranks))
steps = sorted({e["args"]["step"] for e in ranks[0]})
if steps != [2, 3, 4, 5]: fail("steps %s" % steps)
inversions = 0
for s in steps:
    per = []
    for ev in ranks:
        mine = [e for e in ev if e["args"]["step"] == s]
        ex = sorted((e for e in mine if e["cat"] == "exchange"), key=lambda e: e["ts"])
        rounds = sorted((e for e in mine if e["cat"] == "negotiate"), key=lambda e: e["ts"])
        ready = {e["args"]["slice"]: e["ts"] for e in mine if e["cat"] == "ready"}
        if any(e["tid"] != 1 for e in ex + rounds): fail("step %d: exchange or negotiation off the exchange thread" % s)
        wire = [e["args"]["slice"] for e in ex]
        if sorted(wire) != list(range(18)) or sorted(ready) != list(range(18)):
            fail("step %d: slices %s exchanged, %d ready events" % (s, wire, len(ready)))
        chosen = [r["args"].get("slice", -1) for r in rounds]
        if [c for c in chosen if c >= 0] != wire: fail("step %d: wire order %s, rounds chose %s" % (s, wire, chosen))
        for e in ex:  # each exchange after its round's agreement
            k = chosen.index(e["args"]["slice"])
            if e["ts"] < rounds[k]["ts"] + rounds[k]["dur"]: fail("step %d: slice %d before its agreement" % (s, e["args"]["slice"]))
        per.append((wire, chosen, rounds, ready))
    if any(p[1] != per[0][1] for p in per): fail("step %d: the ranks' rounds differ" % s)
    done = set()
    for k, c in enumerate(per[0][1]):
        taken = [p[2][k]["ts"] for p in per]
        everywhere = lambda j: all(p[3][j] <= t for p, t in zip(per, taken))
        if c >= 0 and not everywhere(c): fail("step %d round %d: slice %d not ready on every rank" % (s, k, c))
        better = [j for j in range(18) if j not in done and (c < 0 or j < c) and everywhere(j)]
        if better: fail("step %d round %d: chose %d while %s (higher priority) were ready on every rank" % (s, k, c, better))
        if c >= 0:
            inversions += any(j > c for j in done)
            done.add(c)
print("       %d traced steps x 4 ranks follow the rule; %d slices went after a lower-priority one" % (len(steps), inversions))
PY
}
check "4 ranks, steps 2-5: the wire order is the priority order among slices ready everywhere" check_order
summary=$("$CEDAR" trace summary "$WORK"/p.rank0.json 2>&1)
check "trace summary lists the slices in wire order" contains "$summary" "rank 0 step 2: 18 slices in"

# Refused: an algorithm that compresses whole buckets, and priority without overlap.
out=$("$CEDAR" run "$WORK/lenet.yaml" --db "$DB" --quiet --set algorithm=topk \
  --set train.schedule=priority 2>&1)
check "top-k with priority is refused, naming it" contains "$out" "algorithm 'topk'"
out=$("$CEDAR" run "$WORK/lenet.yaml" --db "$DB" --quiet --set train.overlap=false \
  --set train.schedule=priority 2>&1)
check "priority without overlap is refused" contains "$out" \
  "--set train.schedule: train.schedule: priority orders the exchanges that overlap backward"
finish
