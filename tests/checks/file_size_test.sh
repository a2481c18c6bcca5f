#!/usr/bin/env bash
# No source file of the product (every C++ file outside tests/, bench/, fuzz/ and build folders)
# is over 400 lines: a file that grows past it is split by what its parts do. Names each one.
#   tests/checks/file_size_test.sh ROOT
set -uo pipefail
ROOT="$1"
limit=400
cd "$ROOT" || exit 1
over=$(git ls-files '*.cpp' '*.h' ':!tests/' ':!bench/' ':!fuzz/' 2>/dev/null | while read -r f; do
  n=$(wc -l < "$f")
  [ "$n" -gt "$limit" ] && echo "$f: $n lines"
done)
if [ -n "$over" ]; then
  echo "FAIL: product source files over $limit lines:"
  echo "$over"
  exit 1
fi
echo "every product source file has at most $limit lines"
