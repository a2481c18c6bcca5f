#!/usr/bin/env bash
# The include-direction check (scripts/check_layers.py): the tree passes it, and a tree with one
# include pointing up a layer fails it, naming the file, the line and the include.
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
echo "layers: ok"
