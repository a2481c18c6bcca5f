#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (gcc, -O1 -g1) into
# build-asan/ and runs them under ctest; any sanitizer report fails the run.
#   scripts/sanitize.sh               # every unit test (ctest label "unit")
#   scripts/sanitize.sh -R 'bad_|readers|config'   # extra arguments go to ctest; with -R only
#                                                  # the matching tests' executables are built
#   scripts/sanitize.sh --ci                       # the tests labelled "sanitize" only: those
#                                                  # of code reading bytes from files or peers,
#                                                  # and the codecs (what CI runs)
#   scripts/sanitize.sh --build-only               # build the executables, run nothing
# --ci and --build-only may be combined, in that order.
# LibTorch itself is not instrumented. Leak checking is off: LibTorch's static initialisation
# keeps allocations LeakSanitizer would report at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/env.sh
BUILD_DIR="${CEDAR_ASAN_BUILD_DIR:-build-asan}"
# -g1: line tables only, all a sanitizer report needs for its file:line frames (full -g makes the
# LibTorch-heavy objects several times larger, slower to compile and to link).
# clang, as for the fuzz targets: on LibTorch code it compiles an instrumented unit in 0.6-0.7 of
# gcc's CPU time (an empty unit on the precompiled header: 0.3 s, gcc 2.5 s; docs/testing.md).
configure_once . "$BUILD_DIR" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCEDAR_SANITIZE=ON -DCEDAR_BUILD_BENCH=OFF >/dev/null
# Regenerate the build files first if a CMakeLists.txt changed, so that tests added since the last
# run are listed below.
ninja -C "$BUILD_DIR" build.ninja >/dev/null
# The executables the unit tests run, read from ctest's files (ctest itself omits the commands
# of executables not built yet); targets carry their executables' names.
label=unit
if [ "${1:-}" = --ci ]; then
  label=sanitize
  shift
fi
build_only=false
if [ "${1:-}" = --build-only ]; then
  build_only=true
  shift
fi
regex=""
# The tests labelled "gpu" skip every case without a CUDA device: without one, they are neither
# compiled nor run here.
gpu_label=gpu
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  gpu_label=""
fi
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do [ "${args[i]}" = -R ] && regex="${args[i + 1]}"; done
mapfile -t targets < <(python3 - "$BUILD_DIR" "$regex" "$gpu_label" "$label" <<'PY'
import glob, os, re, sys
build = os.path.abspath(sys.argv[1])
wanted = re.compile(sys.argv[2])
left_out = sys.argv[3]
label = sys.argv[4]
exe, unit = {}, set()
for f in glob.glob(os.path.join(build, "**", "CTestTestfile.cmake"), recursive=True):
    text = open(f).read()
    for name, path in re.findall(r'add_test\(\[=\[(.+?)\]=\] "([^"]+)"', text):
        exe[name] = path
    for name, labels in re.findall(r'set_tests_properties\(\[=\[(.+?)\]=\] PROPERTIES .*?LABELS "([^"]*)"', text):
        names = labels.split(";")
        if label in names and wanted.search(name) and not (left_out and left_out in names):
            unit.add(name)
print("\n".join(sorted({os.path.basename(exe[n]) for n in unit if exe.get(n, "").startswith(build)})))
PY
)
((${#targets[@]})) || { echo "[sanitize] no tests labelled $label found in $BUILD_DIR" >&2; exit 1; }
echo "[sanitize] building ${#targets[@]} executables in $BUILD_DIR: ${targets[*]}"
cmake --build "$BUILD_DIR" -j "${CEDAR_JOBS:-$(nproc)}" --target "${targets[@]}"
$build_only && exit 0

export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$BUILD_DIR"
[ -n "$gpu_label" ] && echo "[sanitize] no CUDA device: the tests labelled gpu are left out"
ctest -L "^$label\$" ${gpu_label:+-LE "$gpu_label"} --output-on-failure --timeout 900 -j "${CEDAR_JOBS:-$(nproc)}" "$@"
