#!/usr/bin/env bash
# Checks every tracked C++ file against .clang-format and names the files that differ
# (the ctest test `format`). With --fix, rewrites them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (scripts/setup.sh installs it)"; exit 77; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' 2>/dev/null || find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.h' \) -print)
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One clang-format process for every file; it reports each differing spot as file:line:col.
report="$(clang-format --dry-run "${files[@]}" 2>&1 | grep -oE '^[^:]+:[0-9]+:[0-9]+: (warning|error)' | cut -d: -f1 | sort -u || true)"
echo "check_format: ${#files[@]} files checked"
[[ -z "$report" ]] && exit 0
sed 's/$/ differs from .clang-format (scripts\/check_format.sh --fix rewrites it)/' <<< "$report"
exit 1
