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
finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
