#!/usr/bin/env bash
# End to end, results in shard mode (results/results_mode.h, results/shards.h, results/merge.h):
#   1. Four `cedar suite` processes started together on one four-run suite in shard mode (as four
#      array tasks on four nodes would be), each merging at its end: every run once and completed,
#      every step row present, integrity ok, no shard left, and the data equal to the same suite
#      run into a WAL database (wall-clock columns aside).
#   2. Merging twice adds nothing; a merge waiting for another's lock gives up cleanly; two merges
#      started together take turns; a merge killed -9 at each point of its work (lock taken; rows
#      written, not committed; committed, shard file not yet removed) leaves the main database
#      intact and the next merge completes it.
#   3. A run in auto mode on a folder the test hook calls NFS writes a shard; while it lives the
#      merge leaves it; killed -9 and resumed from a new process, it continues from its checkpoint
#      and merges as one run, equal to an uninterrupted one.
# Usage: shards_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR=$(realpath "$1"); SRC=$(realpath "$2")
WORK=$(mktemp -d /tmp/cedar-e2e-shards.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

cat > suite.yaml <<YAML
name: shards
suite: shards
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 512, test_limit: 200}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 3}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
algorithm: dense
grid:
  world_size: [1]
  algorithm: [dense, fp16, signsgd, topk]
YAML
# What a run measured, without the wall-clock columns: steps, evaluations, algorithm values,
# communication totals and the run rows, by run name.
DATA="SELECT r.name, s.step, s.epoch, s.payload_bytes, s.bus_bytes, s.payload_bytes_all,
        s.cum_payload_bytes, s.cum_bus_bytes, s.dense_bytes, s.train_loss, s.train_accuracy,
        s.learning_rate, s.latency_steps, s.modeled_comm_seconds
      FROM steps s JOIN runs r ON r.id = s.run_id ORDER BY r.name, s.step;
      SELECT r.name, e.step, e.epoch, e.cum_payload_bytes, e.cum_bus_bytes, e.test_loss,
        e.test_accuracy, e.train_loss, e.train_accuracy
      FROM evals e JOIN runs r ON r.id = e.run_id ORDER BY r.name, e.step;
      SELECT r.name, t.step, t.key, t.value FROM step_stats t JOIN runs r ON r.id = t.run_id
      ORDER BY 1, 2, 3;
      SELECT r.name, c.rank, c.op, c.calls, c.elements, c.payload_bytes, c.bus_bytes
      FROM comm_totals c JOIN runs r ON r.id = c.run_id ORDER BY 1, 2, 3;
      SELECT name, algorithm, status, config_hash, world_size, final_test_accuracy,
        best_test_accuracy, total_payload_bytes, total_bus_bytes FROM runs ORDER BY name;"
data() { sqlite3 "$1" "$DATA"; }
# wait_file FILE PID: waits while process PID lives until FILE is written; prints its content.
wait_file() {
  while kill -0 "$2" 2>/dev/null; do [ -s "$1" ] && { cat "$1"; return 0; }; sleep 0.05; done
  echo none; return 1
}

# 1. Four suite processes together, shard mode.
DB="$WORK/four/results.db"
for i in 1 2 3 4; do
  "$CEDAR" suite suite.yaml --db "$DB" --quiet --results-mode shards > "suite-$i.log" 2>&1 &
done
rcs=""; for job in $(jobs -p); do wait "$job"; rcs+="$? "; done
check "four suite processes exit 0" equals "$rcs" "0 0 0 0 "
check "each says it writes shards" equals "$(grep -l 'results: .*shards (as configured' suite-*.log | wc -l)" 4
check "each run trained by exactly one process" equals "$(grep -h ' on 1 rank(s)' suite-*.log | sort | uniq -d | wc -l),$(grep -h ' on 1 rank(s)' suite-*.log | wc -l)" "0,4"
check "every run once, completed" equals "$(q "SELECT name||':'||status FROM runs ORDER BY name" | tr '\n' ' ')" "dense:completed fp16:completed signsgd:completed topk:completed "
check "512 / 32 = 16 steps per run, each once" equals "$(q "SELECT COUNT(*)||','||COUNT(DISTINCT run_id||'/'||step) FROM steps")" "64,64"
check "integrity_check ok" equals "$(q "PRAGMA integrity_check")" ok
check "the main database uses a rollback journal" equals "$(q "PRAGMA journal_mode")" delete
check "the run records say shards" equals "$(q "SELECT DISTINCT results_mode FROM runs")" shards
check "no shard left after the last merge" equals "$(ls "$DB.shards" | grep -c '\.db')" 0
"$CEDAR" suite suite.yaml --db "$WORK/wal/results.db" --quiet --results-mode wal > wal.log 2>&1
check "the same suite in WAL mode" equals "$(sqlite3 "$WORK/wal/results.db" "PRAGMA journal_mode")" wal
check "shard-mode data equal WAL-mode data" equals "$(data "$DB" | md5sum)" "$(data "$WORK/wal/results.db" | md5sum)"
check "... and not empty" greater "$(data "$DB" | wc -l)" 70

# 2. Merges of two shards written by `cedar run` (which does not merge).
K="$WORK/k"
for alg in dense fp16; do
  "$CEDAR" run suite.yaml --db "$K/results.db" --quiet --results-mode shards --set algorithm=$alg \
    --set name=$alg > /dev/null 2>&1
done
check "two closed shards" equals "$(ls "$K/results.db.shards" | grep -c '\.db$')" 2
cp -a "$K" "$WORK/k0"
restore() { rm -rf "$K"; cp -a "$WORK/k0" "$K"; }
DB="$K/results.db"
# A path with neither a database nor shards is an error naming it, not "merged 0 shard(s)".
missing=$("$CEDAR" merge "$WORK/no/such/dir/x.db" 2>&1)
check "merge of a missing database exits 2" equals "$?" 2
check "merge of a missing database names it" contains "$missing" "$WORK/no/such/dir/x.db: no such database"
out=$("$CEDAR" merge "$DB" --results-mode shards)
check "merge: two shards, two runs, 32 step rows" contains "$out" "merged 2 shard(s): 2 new run(s), 32 step rows"
REF=$(data "$DB")
out=$("$CEDAR" merge "$DB" --results-mode shards)
check "merging twice adds nothing" equals "$(q "SELECT COUNT(*) FROM runs")/$(q "SELECT COUNT(*) FROM steps")" 2/32
check "... and says so" contains "$out" "merged 0 shard(s)"

restore
CEDAR_MERGE_HOLD=locked CEDAR_MERGE_HOLD_FILE="$WORK/hold-locked" \
  "$CEDAR" merge "$DB" --results-mode shards > /dev/null 2>&1 &
job=$!
pid=$(wait_file "$WORK/hold-locked" "$job")
out=$("$CEDAR" merge "$DB" --results-mode shards --wait 1 2>&1); rc=$?
check "a merge waiting for a held lock gives up cleanly (exit 4)" equals "$rc" 4
check "... saying why" contains "$out" "another merge held the lock"
kill -9 "$pid"; wait "$job" 2>/dev/null
check "killed holding the lock: no run written" equals "$(q "SELECT COUNT(*) FROM runs" 2>/dev/null || echo 0)" 0
out=$("$CEDAR" merge "$DB" --results-mode shards); rc=$?
check "the next merge breaks the dead merge's lock and completes" equals "$rc/$(data "$DB" | md5sum)" "0/$(echo "$REF" | md5sum)"

for point in in-transaction committed; do
  restore
  CEDAR_MERGE_HOLD=$point CEDAR_MERGE_HOLD_FILE="$WORK/hold-$point" \
    "$CEDAR" merge "$DB" --results-mode shards > /dev/null 2>&1 &
  job=$!
  pid=$(wait_file "$WORK/hold-$point" "$job")
  kill -9 "$pid"; wait "$job" 2>/dev/null
  check "killed $point: main database intact" equals "$(q "PRAGMA integrity_check")" ok
  want=0; [ "$point" = committed ] && want=1
  check "killed $point: $want run(s) in main, both shard files still there" equals \
    "$(q "SELECT COUNT(*) FROM runs")/$(ls "$DB.shards" | grep -c '\.db$')" "$want/2"
  out=$("$CEDAR" merge "$DB" --results-mode shards); rc=$?
  check "killed $point: the next merge completes it, equal to an uninterrupted merge" equals \
    "$rc/$(data "$DB" | md5sum)" "0/$(echo "$REF" | md5sum)"
  [ "$point" = committed ] && check "killed committed: the merged shard is only removed" contains "$out" "merged 1 shard(s): 1 new run(s), 16 step rows; 1 merged earlier, removed"
done

restore
"$CEDAR" merge "$DB" --results-mode shards > merge-a.log 2>&1 &
"$CEDAR" merge "$DB" --results-mode shards > merge-b.log 2>&1 &
rcs=""; for job in $(jobs -p); do wait "$job"; rcs+="$? "; done
check "two merges started together both exit 0" equals "$rcs" "0 0 "
check "... between them merging each shard once" equals "$(data "$DB" | md5sum)" "$(echo "$REF" | md5sum)"

# 3. A run on "NFS" (test hook), auto mode: killed while training, resumed from a new process.
DB="$WORK/nfs/results.db"
ONE=(suite.yaml --set name=one --set train.checkpoint_every_steps=4 --set data.train_limit=1024)
"$CEDAR" run "${ONE[@]}" --db "$WORK/ref.db" --quiet --results-mode wal > /dev/null 2>&1
export CEDAR_TEST_FILESYSTEM=nfs
CEDAR_HOLD_AFTER_STEP=10 CEDAR_HOLD_FILE="$WORK/hold-run" "$CEDAR" run "${ONE[@]}" --db "$DB" \
  --quiet > run-killed.log 2>&1 &
job=$!
pid=$(wait_held "$WORK/hold-run" 1 0 "$job")
shard=$(ls "$DB.shards"/*.0.db)
check "auto on NFS: the run writes a shard" equals "$(sqlite3 "$shard" "SELECT results_mode||' on '||filesystem FROM runs")" "shards on nfs"
out=$("$CEDAR" merge "$DB")
check "a merge leaves the live run's shard" contains "$out" "1 still being written, left for later"
kill -9 "$pid"; wait "$job" 2>/dev/null
out=$("$CEDAR" run "${ONE[@]}" --db "$DB" --resume 2>&1); rc=$?
check "resumed from a new process, it completes" equals "$rc" 0
check "... continuing after its checkpoint at step 8" contains "$out" "resumed after step 8"
check "... into the shard of its next attempt" equals "$(ls "$DB.shards" | grep '\.db$' | sed 's/^.*\.\([0-9]\)\.db$/\1/' | tr '\n' ' ')" "0 1 "
out=$("$CEDAR" merge "$DB")
check "both attempts merge" contains "$out" "merged 2 shard(s): 1 new run(s)"
check "as one completed run, attempt 1" equals "$(q "SELECT COUNT(*)||':'||status||':'||attempt FROM runs")" "1:completed:1"
check "1024 / 32 = 32 steps, each once" equals "$(q "SELECT COUNT(*)||','||COUNT(DISTINCT step) FROM steps")" "32,32"
check "equal to the uninterrupted run" equals "$(data "$DB" | md5sum)" "$(data "$WORK/ref.db" | md5sum)"
unset CEDAR_TEST_FILESYSTEM
finish
