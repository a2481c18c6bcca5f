# Helpers shared by the end-to-end scripts: assertions that print what failed and count results.
set -uo pipefail
PASSED=0
FAILED=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --bind-to none)

check() {  # check "description" command...
  local what="$1"; shift
  if "$@"; then PASSED=$((PASSED + 1)); echo "ok   - $what"
  else FAILED=$((FAILED + 1)); echo "FAIL - $what"; fi
}
equals() { [ "$1" == "$2" ] || { echo "       expected '$2', got '$1'"; return 1; }; }
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
finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
