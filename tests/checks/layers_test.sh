#!/usr/bin/env bash
# The include-direction check (scripts/check_layers.py): the tree passes it, and a tree with one
# include pointing up a layer (config/ to comm/, algorithms/codecs/ to algorithms/exchange/) fails
# it, naming the file, the line and the include; so does a report that reads SQLite itself (an
# include of sqlite3.h, a SELECT) instead of results/' typed queries.
set -euo pipefail
SOURCE_DIR="$1"
CHECK="$SOURCE_DIR/scripts/check_layers.py"

python3 "$CHECK" "$SOURCE_DIR"

tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/config" "$tree/comm" "$tree/runner/train"
touch "$tree/CMakeLists.txt"
printf '#include "config/params.h"\n' > "$tree/comm/ok.h"
printf '#include "runner/source_revision.h"\n#include "comm/ok.h"\n' > "$tree/runner/train/ok.cpp"
python3 "$CHECK" "$tree" > "$tree/out.txt" || { cat "$tree/out.txt"; echo "a tree of downward includes failed"; exit 1; }

printf '#include <string>\n#include "comm/communicator.h"\n' > "$tree/config/params.h"
if python3 "$CHECK" "$tree" > "$tree/out.txt"; then
  echo "config/ including comm/ passed the check"; exit 1
fi
grep -q 'config/params.h:2: includes comm/communicator.h' "$tree/out.txt" || {
  cat "$tree/out.txt"; echo "the report does not name the offending include"; exit 1; }
rm "$tree/config/params.h"
mkdir -p "$tree/reports" "$tree/results"
printf '#include "results/run_queries.h"\n// Reads the runs: select the latest of each.\n' > "$tree/reports/typed.cpp"
python3 "$CHECK" "$tree" > "$tree/out.txt" || {
  cat "$tree/out.txt"; echo "a report through the typed queries failed"; exit 1; }
printf '#include <string>\n#include <sqlite3.h>\n' > "$tree/reports/direct.cpp"
printf 'const char* q =\n  "SELECT name FROM runs";\n' > "$tree/reports/query.cpp"
printf '#include "results/statement.h"\n' > "$tree/runner/train/store_peek.cpp"
if python3 "$CHECK" "$tree" > "$tree/out.txt"; then
  echo "reports/ including sqlite3.h and holding a SELECT passed the check"; exit 1
fi
for expected in 'reports/direct.cpp:2: includes sqlite3.h' 'reports/query.cpp:2: SQL text (SELECT)' \
    'runner/train/store_peek.cpp:1: includes results/statement.h'; do
  grep -qF "$expected" "$tree/out.txt" || {
    cat "$tree/out.txt"; echo "the report does not name: $expected"; exit 1; }
done

# Inside algorithms/: a codec including the exchange (or a paper file) points up.
mkdir -p "$tree/algorithms/codecs" "$tree/algorithms/exchange"
printf '#include "algorithms/codecs/sparse_codec.h"\n' > "$tree/algorithms/exchange/ok.h"
printf '#include "algorithms/exchange/ok.h"\n' > "$tree/algorithms/codecs/sparse_codec.h"
python3 "$CHECK" "$tree" > "$tree/out.txt" || true
grep -q 'algorithms/codecs/sparse_codec.h:1: includes algorithms/exchange/ok.h' "$tree/out.txt" || {
  cat "$tree/out.txt"; echo "a codec including the exchange passed the check"; exit 1; }
if grep -q '^algorithms/exchange/ok.h' "$tree/out.txt"; then
  cat "$tree/out.txt"; echo "the exchange including a codec was reported"; exit 1
fi
echo "layers: ok"
