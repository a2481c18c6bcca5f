# shellcheck shell=bash
# The steps the checks that compare regenerated files share (sourced, not run).

# run_or_report LOG WHAT COMMAND...: runs COMMAND with its output in LOG; when it fails, prints
# "FAIL: WHAT failed:" and the log, and returns 1.
run_or_report() {
  local log="$1" what="$2"
  shift 2
  "$@" > "$log" 2>&1 && return 0
  echo "FAIL: $what failed:"
  cat "$log"
  return 1
}

# same_or_report EXPECTED ACTUAL WHY: prints their unified diff; when they differ, prints
# "FAIL: WHY" after it and returns 1.
same_or_report() {
  diff -u "$1" "$2" && return 0
  echo "FAIL: $3"
  return 1
}
