#!/usr/bin/env bash
# End to end on a real one-node Slurm (scripts/slurm/start_local_slurm.sh, in a temporary folder):
#   1. `cedar sbatch --wait` of a two-run suite on 2 ranks; while the first run trains, the job
#      gets the USR1 that Slurm sends before a time limit: it requeues itself, its interrupted run
#      is marked failed on SIGTERM, the second start of the job finishes every run. The database
#      holds each run completed once, on 2 ranks, with all its steps; the job folder holds the
#      script, the job's output and one log per run.
#   2. The same suite as a job array (one task per run) into another database, in shard mode: each
#      task's run writes its own shard and the tasks merge them into the database.
#   3. The first suite submitted again: every run is skipped, nothing is added.
# Plus the clear errors of bad input. Exits 77 (ctest: skipped) only when Slurm cannot start here
# (not installed, not root); a Slurm that is installed but fails is a failure.
# Usage: slurm_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR=$(realpath "$1"); SRC=$(realpath "$2")
WORK=$(mktemp -d /tmp/cedar-e2e-slurm.XXXXXX)
SLURM_DIR="$WORK/slurm"
cleanup() {
  "$SRC/scripts/slurm/stop_local_slurm.sh" "$SLURM_DIR" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK" || exit 1

cat > suite.yaml <<YAML
name: slurm-e2e
suite: slurm-e2e
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 1024, test_limit: 500}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 3}
optimizer: {lr: 0.05, schedule: constant, weight_decay: 0}
algorithm: dense
grid:
  world_size: [2]
  algorithm: [dense, fp16]
YAML
printf 'name: single\nmodel: {name: lenet5}\nalgorithm: dense\n' > single.yaml
sed 's/algorithm: \[dense, fp16\]/algorithm: [dense, {name: topk, ratio: 7}]/' suite.yaml > bad_ratio.yaml
JOB=(--nodes 1 --ntasks-per-node 2 --time 00:10:00 --grace 60)

# Bad input fails before anything is submitted (no Slurm needed).
err() { "$CEDAR" sbatch "$@" --dry-run 2>&1 >/dev/null; }
check "missing experiment file" contains "$(err missing.yaml "${JOB[@]}")" "missing.yaml: cannot open experiment file"
check "experiment without a grid" contains "$(err single.yaml "${JOB[@]}")" "single.yaml: no grid: section"
check "--nodes 0" contains "$(err suite.yaml --nodes 0 --ntasks-per-node 2)" "--nodes 0: expected at least 1"
check "malformed --time" contains "$(err suite.yaml --nodes 1 --ntasks-per-node 2 --time 10min)" "--time 10min: expected HH:MM:SS"
check "runs larger than the job" contains "$(err suite.yaml --nodes 1 --ntasks-per-node 1)" "needs 2 ranks"
check "a bad algorithm parameter is caught at submission" contains "$(err bad_ratio.yaml "${JOB[@]}")" "algorithm.ratio: value 7 is out of range"
script=$("$CEDAR" sbatch suite.yaml "${JOB[@]}" --array --dry-run)
check "dry run prints the array script" contains "$script" $'#SBATCH --array=0-1\n'
check "dry run writes nothing" equals "$(ls -d results 2>/dev/null)" ""

out=$("$SRC/scripts/slurm/start_local_slurm.sh" "$SLURM_DIR" 2>"$WORK/start.err")
case $? in
  0) ;;
  3) echo "SKIP: $(cat "$WORK/start.err")"; [ "$FAILED" -eq 0 ] && exit 77; finish; exit ;;
  *) cat "$WORK/start.err"; echo "FAIL - the local Slurm did not start"; exit 1 ;;
esac
eval "$out"
check "start prints the SLURM_CONF line" equals "$out" "export SLURM_CONF=$SLURM_DIR/slurm.conf"
check "the node is idle" equals "$(sinfo -h -o %T)" "idle"
check "a second start finds it running" equals "$("$SRC/scripts/slurm/start_local_slurm.sh" "$SLURM_DIR" 2>/dev/null)" "$out"

# 1. One job for the suite, requeued once while its first run trains.
DB="$WORK/one/results.db"
# The first run's ranks hold after step 5 (once: not again after the requeue) until the job's
# signal reaches them, so the signal provably finds a run training.
CEDAR_HOLD_AFTER_STEP=5 CEDAR_HOLD_FILE="$WORK/hold-one" \
    "$CEDAR" sbatch suite.yaml "${JOB[@]}" --db "$DB" --wait > one.out 2>&1 &
sbatch_pid=$!
wait_held "$WORK/hold-one" 2 0 "$sbatch_pid" > /dev/null
job=$(sed -n 's/^submitted job \([0-9]*\):.*/\1/p' one.out)
steps=$(q "SELECT COUNT(*) FROM steps JOIN runs ON runs.id = run_id WHERE status='running'" 2>/dev/null)
check "a run was training when the job was signalled" equals "${steps:-0}" 5
scancel --batch --signal=USR1 "$job"
wait $sbatch_pid
rc=$?
cat one.out | head -8
check "cedar sbatch --wait exits 0 after the requeued job ends" equals "$rc" 0
JOB_DIR=$(ls -d "$WORK"/one/slurm/slurm-e2e-*)
check "job folder beside the database" equals "$(echo "$JOB_DIR" | wc -l)" 1
check "job script, job output and one log per run" equals "$(cd "$JOB_DIR" && ls | tr '\n' ' ')" "job.sh run-00-dense.log run-01-fp16.log slurm-$job.out "
joblog=$(cat "$JOB_DIR/slurm-$job.out")
check "the job requeued itself on USR1" contains "$joblog" "cedar: requeueing job $job before its time limit"
check "the job started a second time" contains "$joblog" "cedar: job $job, start 2, on $(hostname -s)"
check "the interrupted run was stopped by SIGTERM" contains "$(cat "$JOB_DIR"/run-*.log)" "interrupted by SIGTERM"
check "the job printed the comparison table" contains "$joblog" "| fp16 | fp16 | lenet5 | fashion-mnist | 2 |"
check "cedar sbatch printed the table" contains "$(cat one.out)" "| dense | dense | lenet5 | fashion-mnist | 2 |"
check "each run completed once" equals "$(q "SELECT name||':'||COUNT(*) FROM runs WHERE status='completed' GROUP BY name ORDER BY name" | tr '\n' ' ')" "dense:1 fp16:1 "
check "no run left running or failed" equals "$(q "SELECT COUNT(*) FROM runs WHERE status <> 'completed'")" 0
check "every run on 2 ranks" equals "$(q "SELECT DISTINCT world_size FROM runs")" 2
check "host recorded" equals "$(q "SELECT DISTINCT host FROM runs")" "$(hostname)"
# 1024 images / (2 ranks x 32) = 16 steps, each logged once even for the interrupted run.
check "every step of every run logged" equals "$(q "SELECT COUNT(*) || ',' || COUNT(DISTINCT run_id || '/' || step) FROM steps")" "32,32"

# 2. The suite as a job array, one task per run, into its own database, in shard mode.
DB="$WORK/array/results.db"
out=$("$CEDAR" sbatch suite.yaml "${JOB[@]}" --array --db "$DB" --results-mode shards --wait 2>&1)
check "array: cedar sbatch --wait exits 0" equals "$?" 0
ajob=$(echo "$out" | sed -n 's/^submitted job \([0-9]*\):.*/\1/p')
check "array: submitted with tasks 0-1" contains "$out" "submitted job $ajob: suite 'slurm-e2e', 2 run(s), array tasks 0-1"
ADIR=$(ls -d "$WORK"/array/slurm/slurm-e2e-*)
check "array: one output per task and one log per run" equals "$(cd "$ADIR" && ls | tr '\n' ' ')" "job.sh run-00-dense.log run-01-fp16.log slurm-${ajob}_0.out slurm-${ajob}_1.out "
check "array: task 1 ran run 1" contains "$(cat "$ADIR/slurm-${ajob}_1.out")" "cedar: run 1 (run-01-fp16.log) exited with status 0"
check "array: both runs completed on 2 ranks" equals "$(q "SELECT name||':'||world_size FROM runs WHERE status='completed' ORDER BY name" | tr '\n' ' ')" "dense:2 fp16:2 "
check "array: 1024 / (2 x 32) = 16 steps per run" equals "$(q "SELECT DISTINCT COUNT(*) FROM steps GROUP BY run_id")" 16
check "array: each run wrote a shard" equals "$(q "SELECT DISTINCT results_mode FROM runs")" shards
check "array: the tasks merged every shard" equals "$(q "SELECT COUNT(*) FROM merged_shards")/$(ls "$DB.shards" | grep -c '\.db$')" "2/0"
check "array: each task ended with a merge" equals "$(cat "$ADIR"/slurm-"${ajob}"_*.out | grep -c "^$DB: merged")" 2
check "array: merged database intact" equals "$(q "PRAGMA integrity_check")" ok

# 3. The first suite again, same database: the job skips every completed run.
DB="$WORK/one/results.db"
out=$("$CEDAR" sbatch suite.yaml "${JOB[@]}" --db "$DB" --wait 2>&1)
check "resubmission exits 0" equals "$?" 0
check "resubmission: a second job folder" equals "$(ls -d "$WORK"/one/slurm/slurm-e2e-* | wc -l)" 2
check "resubmission: both runs skipped" equals "$(cat $(ls -d "$WORK"/one/slurm/slurm-e2e-* | tail -1)/run-*.log | grep -c 'completed earlier, skipped')" 2
check "resubmission: no run added" equals "$(q "SELECT COUNT(*) FROM runs")" 2

"$SRC/scripts/slurm/stop_local_slurm.sh" "$SLURM_DIR" 2>/dev/null
check "stop: no daemon of this instance left" equals "$(pgrep -f "$SLURM_DIR/" | wc -l)" 0
finish
