# Helpers shared by the end-to-end scripts: assertions that print what failed and count results.
set -uo pipefail
PASSED=0
FAILED=0
FAILED_CHECKS=()
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A rank waiting for another yields its core instead of spinning on it: the tests start more
# ranks than the machine has cores, and a spinning rank takes the time its peer needs. Exported,
# so the mpirun that `cedar suite` starts gets it too.
export OMPI_MCA_mpi_yield_when_idle=1
# MPI_Init need not probe the transports this machine has no hardware for (the cm and UCX
# messaging layers, InfiniBand, libfabric): ob1 over shared memory, tcp and self is what it
# selects here anyway (tcp for the virtual-cluster tests), and the probing cost each 2-rank
# launch about 0.2 s of wall time.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=^openib,ofi
MPIRUN=(mpirun --oversubscribe --bind-to none)

check() {  # check "description" command...
  local what="$1"; shift
  if "$@"; then PASSED=$((PASSED + 1)); echo "ok   - $what"
  else FAILED=$((FAILED + 1)); FAILED_CHECKS+=("$what"); echo "FAIL - $what"; fi
}
equals() { [ "$1" == "$2" ] || { echo "       expected '$2', got '$1'"; return 1; }; }
differs() { [ "$1" != "$2" ] || { echo "       expected something other than '$2'"; return 1; }; }
contains() { [[ "$1" == *"$2"* ]] || { echo "       expected to find '$2' in: $1"; return 1; }; }
greater() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }' || { echo "       expected $1 > $2"; return 1; }; }
q() { sqlite3 "$DB" "$1"; }
# A run started with CEDAR_HOLD_AFTER_STEP=N and CEDAR_HOLD_FILE=PREFIX holds on every rank after
# step N until it gets SIGTERM/SIGINT (runner/train/hold_for_signal.h), so a signal or kill reaches a
# step the run has provably completed and not gone past. Waits, while process JOB lives, until
# RANKS ranks hold; prints rank RANK's pid ("none" when the job ended first).
wait_held() {  # wait_held PREFIX RANKS RANK JOB
  local r all
  while kill -0 "$4" 2>/dev/null; do
    all=1
    for ((r = 0; r < $2; r++)); do [ -s "$1.rank$r" ] || all=0; done
    [ "$all" = 1 ] && { cat "$1.rank$3"; return 0; }
    sleep 0.05
  done
  echo none; return 1
}
# Runs COMMAND in the background held after STEP (CEDAR_HOLD_AFTER_STEP, hold files LOG.hold.rankR),
# sends it SIGTERM once all RANKS hold there, so the signal lands at a step every rank has reached
# and none has finished, and returns its exit status; its output goes to LOG.
sigterm_when_held() {  # sigterm_when_held STEP RANKS LOG COMMAND...
  local step=$1 ranks=$2 log=$3 job rc
  shift 3
  CEDAR_HOLD_AFTER_STEP=$step CEDAR_HOLD_FILE="$log.hold" "$@" > "$log" 2>&1 &
  job=$!
  wait_held "$log.hold" "$ranks" 0 "$job" > /dev/null
  kill -TERM "$job"; wait "$job"; rc=$?
  return "$rc"
}
# Everything a run records, except wall-clock times (which differ between attempts).
metrics() {  # metrics DB RUN_NAME
  local id
  id=$(sqlite3 "$1" "SELECT MAX(id) FROM runs WHERE name='$2'")
  [ -n "$id" ] || { echo "no run named $2 in $1"; return; }
  sqlite3 "$1" "SELECT step, epoch, payload_bytes, bus_bytes, payload_bytes_all, cum_payload_bytes,
                       train_loss, train_accuracy, learning_rate, latency_steps FROM steps
                WHERE run_id=$id ORDER BY step;
                SELECT step, key, value FROM step_stats WHERE run_id=$id ORDER BY step, key;
                SELECT step, epoch, cum_payload_bytes, test_loss, test_accuracy, train_loss FROM evals
                WHERE run_id=$id ORDER BY step;
                SELECT rank, op, calls, elements, payload_bytes, bus_bytes FROM comm_totals
                WHERE run_id=$id ORDER BY rank, op;
                SELECT status, final_test_accuracy, best_test_accuracy, total_payload_bytes
                FROM runs WHERE id=$id"
}

# The failed checks are named again last: a long haystack printed by `contains` must not push them
# out of a log's tail.
finish() {
  local what
  for what in "${FAILED_CHECKS[@]}"; do echo "failed: $what"; done
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
