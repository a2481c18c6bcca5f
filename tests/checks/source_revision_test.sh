#!/usr/bin/env bash
# The source revision compiled in is the one of the latest build, not of the configure
# (cmake/SourceRevision.cmake). A scratch git repository holds a small CMake project that compiles
# the revision into a program printing it. Commit A, configure and build: A. Commit B, build
# without configuring: B. An uncommitted edit: a diff hash, a different one when the edit changes or
# an untracked file appears, none once the tree is clean again. A build with nothing new leaves the
# generated file as it was. Outside a git checkout: unknown. Then, given Cedar's own build folder
# (Ninja), building cedar always runs the step.
# Usage: source_revision_test.sh SOURCE_DIR [BUILD_DIR]
set -euo pipefail
SOURCE_DIR="$(cd "$1" && pwd)"
BUILD_DIR="${2:-}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

repo="$work/repo"
mkdir -p "$repo"
cd "$repo"
git init -q
git config user.email cedar@example.com
git config user.name cedar
git config commit.gpgsign false
cat > CMakeLists.txt <<EOF
cmake_minimum_required(VERSION 3.16)
project(revision_probe CXX)
include("$SOURCE_DIR/cmake/SourceRevision.cmake")
cedar_source_revision_library(probe_revision \${PROJECT_SOURCE_DIR})
add_executable(probe probe.cpp)
target_include_directories(probe PRIVATE "$SOURCE_DIR")
target_link_libraries(probe PRIVATE probe_revision)
EOF
cat > probe.cpp <<'EOF'
#include <cstdio>

#include "runner/source_revision.h"

int main() {
  std::printf("%s %s %s\n", cedar::kSourceCommit, cedar::source_version().c_str(),
              cedar::kSourceDiff[0] ? cedar::kSourceDiff : "clean");
}
EOF
echo one > notes.txt
git add -A
git commit -qm A
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
# The build folder lies inside the checkout and is not ignored: its files must not count as
# uncommitted changes.
cmake -S . -B build "${generator[@]}" > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
probe() {
  cmake --build build > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
  ./build/probe
}

a="$(git rev-parse HEAD)"
out="$(probe)"
[ "$out" = "$a $(git describe --always --tags) clean" ] || fail "after commit A: '$out'"

echo two > notes.txt
git commit -qam B
b="$(git rev-parse HEAD)"
out="$(probe)"
[ "$out" = "$b $(git describe --always --tags) clean" ] || fail "after commit B, a build (no configure) printed '$out'"

generated=build/generated/probe_revision.cpp
touch -d 2000-01-01 "$generated"
probe > /dev/null
[ "$(stat -c %Y "$generated")" = "$(date -d 2000-01-01 +%s)" ] ||
  fail "a build with nothing new rewrote $generated"

echo three > notes.txt
read -r commit version diff1 <<< "$(probe)"
[ "$commit" = "$b" ] || fail "an edit changed the commit to $commit"
[ "$version" = "$(git describe --always --tags)-dirty" ] || fail "an edit gave version $version"
[[ "$diff1" =~ ^[0-9a-f]{64}$ ]] || fail "an uncommitted edit gave no diff hash: '$diff1'"
echo four > notes.txt
read -r _ _ diff2 <<< "$(probe)"
[[ "$diff2" =~ ^[0-9a-f]{64}$ && "$diff2" != "$diff1" ]] || fail "another edit kept diff hash $diff2"
echo new > untracked.txt
read -r _ _ diff3 <<< "$(probe)"
[[ "$diff3" =~ ^[0-9a-f]{64}$ && "$diff3" != "$diff2" ]] || fail "an untracked file kept diff hash $diff3"
rm untracked.txt
git checkout -q notes.txt
out="$(probe)"
[ "$out" = "$b $(git describe --always --tags) clean" ] || fail "a clean tree again printed '$out'"

# Not a checkout: a copy without .git, and a folder the enclosing repository does not track.
step="$SOURCE_DIR/cmake/source_revision_step.cmake"
mkdir "$work/tarball"
cp CMakeLists.txt probe.cpp notes.txt "$work/tarball/"
for dir in "$work/tarball" "$repo/untracked_subproject"; do
  mkdir -p "$dir"
  cp CMakeLists.txt "$dir/"
  cmake -DSOURCE_DIR="$dir" -DOUTPUT="$work/out.cpp" -P "$step"
  grep -q 'kSourceCommit\[\] = "unknown"' "$work/out.cpp" || fail "$dir: commit is not unknown"
  grep -q 'kSourceDiff\[\] = ""' "$work/out.cpp" || fail "$dir: a diff hash outside a checkout"
done

# Cedar's own build: cedar depends on the step's target, whose custom command has a symbolic
# output, a file that never exists, so Ninja runs the step whenever it builds cedar.
# (`ninja -t inputs` needs Ninja 1.11.)
if [ -n "$BUILD_DIR" ] && [ -f "$BUILD_DIR/build.ninja" ] &&
  ninja -C "$BUILD_DIR" -t inputs cedar > "$work/inputs.txt" 2> /dev/null; then
  grep -qx 'runner/cedar_source_revision_step' "$work/inputs.txt" ||
    fail "cedar does not depend on the source revision step"
  ninja -C "$BUILD_DIR" -t query runner/cedar_source_revision_step > "$work/query.txt"
  grep -qx '    runner/CMakeFiles/cedar_source_revision_step' "$work/query.txt" ||
    fail "the source revision target has no custom command"
  [ ! -e "$BUILD_DIR/runner/CMakeFiles/cedar_source_revision_step" ] ||
    fail "the source revision step has an output file: it would run only when out of date"
fi
echo "source revision: ok"
