#!/usr/bin/env bash
# Set-up and build (as scripts/build.sh), then the whole test suite with ctest.
# Extra arguments go to ctest (e.g. -R config, -L mpi).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "${CEDAR_BUILD_DIR:-build}"
# As many tests at once as there are cores; each test's PROCESSORS property (the MPI and
# end-to-end tests take 2) keeps them from oversubscribing the machine.
ctest --output-on-failure --timeout 900 -j "${CEDAR_JOBS:-$(nproc)}" "$@"
