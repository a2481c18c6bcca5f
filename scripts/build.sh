#!/usr/bin/env bash
# Configures and builds Cedar into build/ (reused by later runs). Runs setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export CCACHE_DIR="${CCACHE_DIR:-$CEDAR_HOME/ccache}"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
# Paths relative to the checkout, so fresh clones elsewhere hit the same cache entries.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
BUILD_DIR="${CEDAR_BUILD_DIR:-build}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCEDAR_PYTHON="$VENV/bin/python" ${CEDAR_CMAKE_ARGS:-}
fi
cmake --build "$BUILD_DIR" -j "${CEDAR_JOBS:-$(nproc)}" ${CEDAR_TARGETS:+--target $CEDAR_TARGETS}
