#!/usr/bin/env bash
# scripts/setup.sh where it cannot install Debian packages: it looks for each package the way the
# build does and prints what is missing with its conda-forge and Spack names, installing nothing.
# The machine is made to look like a cluster login node by PATH alone: `id -u` says 1000, sudo
# wants a password (sudo -n fails), dpkg lists nothing as installed, and apt-get records any call;
# yaml-cpp is hidden from CMake (CMAKE_DISABLE_FIND_PACKAGE, through CEDAR_CMAKE_ARGS as the build
# passes it) and gnuplot from PATH. Then, without apt-get and dpkg at all and nothing hidden, it
# finds everything and exits 0. Last, CMake's lookups search $CONDA_PREFIX.
# Usage: setup_noroot_test.sh SOURCE_DIR
source "$(dirname "$0")/../e2e/lib.sh"
SRC="$1"
WORK=$(mktemp -d /tmp/cedar-setup-noroot.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# bin/: every program of the real PATH as a link (the first of each name), less the ones taken away.
farm() {  # farm DIR NAME...: DIR holds PATH's programs except NAME...
  local dir="$1" d f; shift
  mkdir -p "$dir"
  IFS=: read -ra dirs <<< "$PATH"
  for d in "${dirs[@]}"; do
    [ -d "$d" ] && { ln -s "$d"/* "$dir/" 2> /dev/null || true; }  # an earlier folder's name stays
  done
  for f in "$@"; do rm -f "$dir/$f"; done
}

# The LibTorch environment setup.sh ends with: a stand-in that reports the expected torch.
mkdir -p "$WORK/venv/bin"
printf '#!/bin/sh\necho 2.11.0\n' > "$WORK/venv/bin/python"
chmod +x "$WORK/venv/bin/python"
export CEDAR_VENV="$WORK/venv" CEDAR_TORCH_VERSION=2.11.0

# A login node: not root, sudo -n refused, dpkg knows no package, apt-get must not be run.
farm "$WORK/node" id sudo dpkg-query apt-get gnuplot
REAL_ID=$(command -v id)
cat > "$WORK/node/id" <<SH
#!/bin/sh
[ "\$1" = -u ] && { echo 1000; exit 0; }
exec "$REAL_ID" "\$@"
SH
printf '#!/bin/sh\necho "sudo $*" >> "%s/calls"\nexit 1\n' "$WORK" > "$WORK/node/sudo"
printf '#!/bin/sh\necho "apt-get $*" >> "%s/calls"\nexit 1\n' "$WORK" > "$WORK/node/apt-get"
printf '#!/bin/sh\nexit 1\n' > "$WORK/node/dpkg-query"
chmod +x "$WORK/node/id" "$WORK/node/sudo" "$WORK/node/apt-get" "$WORK/node/dpkg-query"

out=$(PATH="$WORK/node" CEDAR_CMAKE_ARGS="-DCMAKE_DISABLE_FIND_PACKAGE_yaml-cpp=ON" \
  bash "$SRC/scripts/setup.sh" 2>&1)
rc=$?
echo "$out"
check "exits non-zero when a required package is missing" greater "$rc" 0
check "says why it does not use apt" contains "$out" "not root and no password-less sudo"
check "asked sudo without a password prompt, never apt-get" equals "$(cat "$WORK/calls" 2> /dev/null)" "sudo -n true"
check "the table has a header" contains "$out" "debian                 conda-forge              spack"
row() { echo "$out" | grep -E "^  $1 " | tr -s ' '; }
check "yaml-cpp: missing, with its conda-forge and Spack names" equals "$(row libyaml-cpp-dev)" \
  " libyaml-cpp-dev yaml-cpp yaml-cpp required cmake:yaml-cpp"
check "gnuplot: missing from PATH" equals "$(row gnuplot-nox)" " gnuplot-nox gnuplot gnuplot required cmd:gnuplot"
check "libraries CMake finds are not listed (spdlog)" equals "$(row libspdlog-dev)" ""
check "programs on PATH are not listed (cmake)" equals "$(row cmake)" ""
check "exactly two required rows" equals "$(echo "$out" | grep -cE '^  [a-z0-9.+-]+ +.* required +(cmd|cmake|python|file):')" 2
check "a conda-forge line installing both" contains "$out" "conda create -n cedar -c conda-forge gnuplot yaml-cpp && conda activate cedar"
check "a Spack line installing both" contains "$out" "spack install gnuplot yaml-cpp && spack load gnuplot yaml-cpp"$'\n'
check "stops before the LibTorch environment" equals "$(echo "$out" | grep -c 'ready: torch')" 0

# No apt at all, nothing hidden: everything required is found, exit 0 (optional rows may remain).
farm "$WORK/bare" apt-get dpkg-query
out=$(PATH="$WORK/bare" bash "$SRC/scripts/setup.sh" 2>&1)
rc=$?
echo "$out"
check "without apt-get: exits 0 when nothing required is missing" equals "$rc" 0
check "... says so" contains "$out" "[setup] no apt-get: not installing Debian packages"
check "... every required package found" contains "$out" "[setup] every required package found"
check "... no required row" equals "$(echo "$out" | grep -cE ' required +(cmd|cmake|python|file):')" 0
check "... and goes on to the LibTorch environment" contains "$out" "[setup] ready: torch 2.11.0 in $WORK/venv"

# The build's lookups (cmake/CedarDependencies.cmake, configured here as setup.sh does) search an
# active conda environment first: a yaml-cpp package in $CONDA_PREFIX is the one found.
mkdir -p "$WORK/conda/lib/cmake/yaml-cpp"
echo 'set(yaml-cpp_FOUND TRUE)' > "$WORK/conda/lib/cmake/yaml-cpp/yaml-cpp-config.cmake"
CONDA_PREFIX="$WORK/conda" cmake -S "$SRC/cmake/probe" -B "$WORK/probe" > "$WORK/probe.log" 2>&1
check "CMake takes yaml-cpp from \$CONDA_PREFIX" equals \
  "$(sed -n 's/^yaml-cpp_DIR:PATH=//p' "$WORK/probe/CMakeCache.txt")" "$WORK/conda/lib/cmake/yaml-cpp"
finish
