#!/usr/bin/env bash
# Configures and builds Cedar into build/ (reused by later runs). Runs setup.sh first.
# CEDAR_TARGETS="cedar config_test" builds only those targets; unset, everything (the cedar
# executable, the tests and the benchmarks), so a build folder that scripts/demo.sh filled with
# cedar alone gets the rest from scripts/test.sh. CEDAR_JOBS: parallel jobs (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/env.sh
BUILD_DIR="${CEDAR_BUILD_DIR:-build}"
configure_once . "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CEDAR_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "${CEDAR_JOBS:-$(nproc)}" ${CEDAR_TARGETS:+--target $CEDAR_TARGETS}
