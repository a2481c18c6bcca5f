#!/usr/bin/env bash
# End to end: `cedar run` with train.trace writes a Chrome-trace timeline per rank of the steps in
# train.trace_steps, whose events nest and follow each other as the trainer runs them, and
# `cedar trace summary` reads it. Only orders the code guarantees are asserted, never durations.
# Usage: timeline_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-timeline.XXXXXX)
DB="$WORK/e2e.db"
trap 'rm -rf "$WORK"' EXIT

# 1024 images / (2 ranks x 32) = 16 steps of LeNet-5.
cat > "$WORK/small.yaml" <<YAML
name: timeline
suite: e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 1024, test_limit: 500}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 7, bucket_mb: 0.02}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
algorithm: dense
YAML

# LeNet-5's parameters in reverse model order (the order backward produces them), packed into
# buckets of at most 0.02 MiB = 20971 bytes (a tensor larger than that alone): fc3 bias, weight and
# fc2 bias (10 + 840 + 84); fc2 weight (84 x 120); fc1 bias (120); fc1 weight (120 x 400); conv2 and
# conv1 (16 + 16 x 6 x 5 x 5 + 6 + 6 x 5 x 5).
ELEMENTS="934,10080,120,48000,2572"

# Checks one rank's trace file: STEPS (FIRST-LAST) traced, 5 buckets each, the orders below.
check_trace() {  # check_trace FILE FIRST LAST OVERLAP(0|1)
  python3 - "$@" "$ELEMENTS" <<'PY'
import json, sys
path, first, last, overlap, elements = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", [int(x) for x in sys.argv[5].split(",")]
events = [e for e in json.load(open(path))["traceEvents"] if e["ph"] == "X"]
def fail(msg):
    print("       " + path + ": " + msg); sys.exit(1)
steps = sorted({e["args"]["step"] for e in events})
if steps != list(range(first, last + 1)): fail("steps %s, expected %d-%d" % (steps, first, last))
end = lambda e: e["ts"] + e["dur"]
for s in steps:
    ev = [e for e in events if e["args"]["step"] == s]
    one = lambda cat: [e for e in ev if e["cat"] == cat]
    for cat in ("step", "forward", "backward", "optimizer", "after_step"):
        if len(one(cat)) != 1: fail("step %d: %d %s events" % (s, len(one(cat)), cat))
    step, fwd, bwd, opt, after = (one(c)[0] for c in ("step", "forward", "backward", "optimizer", "after_step"))
    ex = sorted(one("exchange"), key=lambda e: e["args"]["bucket"])
    if [e["args"]["bucket"] for e in ex] != list(range(len(elements))): fail("step %d: buckets %s" % (s, [e["args"]["bucket"] for e in ex]))
    if [e["args"]["elements"] for e in ex] != elements: fail("step %d: bucket sizes %s" % (s, [e["args"]["elements"] for e in ex]))
    if not (fwd["tid"] == bwd["tid"] == opt["tid"] == 0): fail("step %d: compute off the training thread" % s)
    if end(fwd) > bwd["ts"]: fail("step %d: forward ends after backward starts" % s)
    for a, b in zip(ex, ex[1:]):
        if end(a) > b["ts"]: fail("step %d: bucket %d's exchange ends after the next starts" % (s, a["args"]["bucket"]))
    if end(ex[-1]) > opt["ts"]: fail("step %d: the optimizer starts before the last exchange ends" % s)
    if end(opt) > after["ts"]: fail("step %d: after_step before the optimizer ends" % s)
    for e in ev:
        if e["ts"] < step["ts"] or end(e) > end(step): fail("step %d: %s outside its step" % (s, e["name"]))
    if overlap:
        # The exchange thread takes each bucket once its last gradient is in; the main thread waits
        # for the exchanges after backward, before the optimizer.
        grads = sorted(one("gradients"), key=lambda e: e["args"]["bucket"])
        wait = one("wait")
        if len(grads) != len(elements) or len(wait) != 1: fail("step %d: %d gradients, %d wait events" % (s, len(grads), len(wait)))
        if any(e["tid"] != 1 for e in ex): fail("step %d: an exchange off the exchange thread" % s)
        for g, e in zip(grads, ex):
            if g["ts"] < bwd["ts"] or end(g) > end(bwd): fail("step %d: bucket %d's gradients outside backward" % (s, g["args"]["bucket"]))
            if e["ts"] < end(g): fail("step %d: bucket %d exchanged before its gradients were in" % (s, g["args"]["bucket"]))
        if wait[0]["ts"] < end(bwd) or end(ex[-1]) > end(wait[0]) or end(wait[0]) > opt["ts"]: fail("step %d: the wait does not span the exchanges' end" % s)
    else:
        if end(bwd) > ex[0]["ts"]: fail("step %d: an exchange starts before backward ends (overlap off)" % s)
        if any(e["tid"] != 0 for e in ex): fail("step %d: an exchange off the training thread" % s)
PY
}

"${MPIRUN[@]}" -np 2 "$CEDAR" run "$WORK/small.yaml" --db "$DB" --quiet --set train.overlap=true \
  --set train.trace="$WORK/ov.json" --set train.trace_steps=3-6 > "$WORK/ov.log" 2>&1
check "overlapped traced run exits 0" equals "$?" 0
check "one trace file per rank, none under the plain name" equals \
  "$(cd "$WORK" && ls ov*.json | tr '\n' ' ')" "ov.rank0.json ov.rank1.json "
check "rank 0: steps 3-6, 5 buckets each, exchanges on the exchange thread after their gradients" check_trace "$WORK/ov.rank0.json" 3 6 1
check "rank 1: the same" check_trace "$WORK/ov.rank1.json" 3 6 1
check "rank 1's events carry its rank" equals "$(jq '[.traceEvents[] | select(.ph == "X") | .pid] | unique | tostring' -r "$WORK/ov.rank1.json")" "[1]"
check "5 buckets x 4 steps of exchanges" equals "$(jq '[.traceEvents[] | select(.cat == "exchange")] | length' "$WORK/ov.rank0.json")" 20
summary=$("$CEDAR" trace summary "$WORK/ov.rank0.json" "$WORK/ov.rank1.json" 2>&1)
check "trace summary reads both ranks' steps" contains "$summary" "2 rank(s), 8 traced step(s) in all"
share=$(sed -nE 's/^hidden exchange share.*median ([0-9.]+)$/\1/p' <<< "$summary")
check "... and gives a hidden share in [0, 1]" awk -v s="$share" 'BEGIN { exit !(s != "" && s >= 0 && s <= 1) }'
echo "       overlapped run: hidden exchange share (median) $share"

# Every step records its exchange time and the part backward hid (step_stats); on the traced steps
# rank 0's values are what its timeline says: the exchange events' durations and their parts
# inside the backward event, computed here from the file.
OV=$(q "SELECT MAX(id) FROM runs WHERE world_size = 2")
check "every step records the overlap's exchange and hidden seconds" equals \
  "$(q "SELECT COUNT(*) FROM step_stats WHERE run_id = $OV AND key IN ('overlap_exchange_seconds', 'overlap_hidden_seconds')")" 32
check "... with 0 <= hidden <= exchange" equals "$(q "SELECT COUNT(*) FROM step_stats e JOIN step_stats h USING (run_id, step)
  WHERE e.run_id = $OV AND e.key = 'overlap_exchange_seconds' AND h.key = 'overlap_hidden_seconds'
  AND h.value >= 0 AND h.value <= e.value AND e.value > 0")" 16
stats_of_traced() {
  q "SELECT e.step || ' ' || e.value || ' ' || h.value FROM step_stats e JOIN step_stats h USING (run_id, step)
     WHERE e.run_id = $OV AND e.key = 'overlap_exchange_seconds' AND h.key = 'overlap_hidden_seconds'
     AND e.step BETWEEN 3 AND 6 ORDER BY e.step"
}
same_as_trace() {  # same_as_trace TRACE < "step exchange hidden" lines
  python3 -c '
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
rows = [l.split() for l in sys.stdin if l.strip()]
if len(rows) != 4: print("       %d rows, expected 4" % len(rows)); sys.exit(1)
for step, exchange, hidden in rows:
    ev = [e for e in events if e["args"]["step"] == int(step)]
    b = [e for e in ev if e["cat"] == "backward"][0]
    b0, b1 = b["ts"], b["ts"] + b["dur"]
    ex = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e["cat"] == "exchange"]
    want_exchange = sum(t1 - t0 for t0, t1 in ex) / 1e6
    want_hidden = sum(max(0.0, min(t1, b1) - max(t0, b0)) for t0, t1 in ex) / 1e6
    if abs(float(exchange) - want_exchange) > 1e-6 or abs(float(hidden) - want_hidden) > 1e-6:
        print("       step %s: recorded %s / %s s, the trace says %.9f / %.9f" % (step, exchange, hidden, want_exchange, want_hidden)); sys.exit(1)
' "$1"
}
check "rank 0's recorded exchange and hidden seconds of steps 3-6 are its trace's" \
  same_as_trace "$WORK/ov.rank0.json" <<< "$(stats_of_traced)"
report=$("$CEDAR" report "$DB" --suite e2e --overlap 2>&1)
check "cedar report --overlap shows the run: 2 ranks, 1 seed, 15 steps after step 0" contains "$report" "| timeline | 2 | 1 | 15 | "

# Overlap off, one rank, a range running past the last step: written when the run ends, with the
# steps it reached (14 and 15 of 1024 / 32 = 32 steps, max_steps 16); every exchange after backward.
"$CEDAR" run "$WORK/small.yaml" --db "$DB" --quiet --set train.max_steps=16 \
  --set train.trace="$WORK/plain.json" --set train.trace_steps=14-40 > "$WORK/plain.log" 2>&1
check "overlap-off traced run exits 0" equals "$?" 0
check "one rank: the plain file name; steps 14-15; exchanges after backward" check_trace "$WORK/plain.json" 14 15 0
check "its hidden share is 0" contains "$("$CEDAR" trace summary "$WORK/plain.json")" "median 0.000"
check "... and it records no overlap stats" equals "$(q "SELECT COUNT(*) FROM step_stats s JOIN runs r ON r.id = s.run_id
  WHERE r.world_size = 1 AND s.key LIKE 'overlap_%'")" 0

# Where the trace goes is not what runs: the same run without it has the same fingerprint.
"$CEDAR" run "$WORK/small.yaml" --db "$DB" --quiet --set train.max_steps=16 > /dev/null 2>&1
check "traced and untraced runs share the configuration fingerprint" equals \
  "$(q "SELECT COUNT(*) || ',' || COUNT(DISTINCT config_hash) FROM runs WHERE world_size = 1")" "2,1"

# Bad values name the key.
out=$("$CEDAR" run "$WORK/small.yaml" --db "$DB" --quiet --set train.trace_steps=5-2 2>&1)
check "a backwards range is refused, naming the key" contains "$out" "train.trace_steps: '5-2' ends before it starts"
out=$("$CEDAR" run "$WORK/small.yaml" --db "$DB" --quiet --set train.trace="$WORK/no/such/t.json" 2>&1)
check "a trace in a missing folder is refused, naming the key" contains "$out" "train.trace: $WORK/no/such/t.json: folder"
out=$("$CEDAR" trace summary "$WORK/small.yaml" 2>&1)
check "trace summary names a file that is no trace" contains "$out" "$WORK/small.yaml: not a valid trace"

finish
