#!/usr/bin/env bash
# Installs everything Cedar needs: system packages (apt on Debian 12) and LibTorch from PyPI's
# torch wheel in a virtual environment shared by every checkout on this machine.
# Safe to run again: installed packages and an up-to-date environment are skipped.
#
# Where apt cannot be used (not root and no password-less sudo, no apt-get at all, or
# CEDAR_SETUP_NO_APT=1), nothing is installed: each package below is looked for the way the
# build looks for it (CMake's find_package through CMAKE_PREFIX_PATH and $CONDA_PREFIX, programs on
# PATH), and what is missing is printed with its conda-forge and Spack names; the exit status is
# non-zero only when something required is missing. CEDAR_CMAKE_ARGS (as scripts/build.sh passes
# them) reach that CMake lookup too.
set -euo pipefail

TORCH_VERSION="${CEDAR_TORCH_VERSION:-2.11.0}"
export CEDAR_HOME="${CEDAR_HOME:-$HOME/.cache/cedar}"
VENV="${CEDAR_VENV:-$CEDAR_HOME/venv}"
CEDAR_SETUP_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# One row per Debian package: debian | conda-forge | Spack | need | how to look for it.
# need: "required" (build, run, tests, demo) or "optional" (format check, local Slurm, fuzzing,
# the default data). Looked for as: cmake:NAME (a "cedar-probe NAME" line of cmake/probe/),
# cmd:PROGRAM (on PATH), python:MODULE (importable by python3), file:PATH, fuzzer (libFuzzer's
# runtime in clang's resource folder). "-": no such package there.
CEDAR_PACKAGES="
build-essential       | cxx-compiler          | gcc              | required | cmd:c++
cmake                 | cmake                 | cmake            | required | cmd:cmake
ninja-build           | ninja                 | ninja            | required | cmd:ninja
ccache                | ccache                | ccache           | optional | cmd:ccache
clang-format          | clang-format          | llvm             | optional | cmd:clang-format
python3               | python                | python           | required | cmd:python3
python3-venv          | python                | python           | required | python:ensurepip
python3-pip           | pip                   | py-pip           | required | python:pip
libopenmpi-dev        | openmpi openmpi-mpicxx| openmpi          | required | cmake:mpi
openmpi-bin           | openmpi               | openmpi          | required | cmd:mpirun
libyaml-cpp-dev       | yaml-cpp              | yaml-cpp         | required | cmake:yaml-cpp
libboost-dev          | libboost-headers      | boost            | required | cmake:boost
libsqlite3-dev        | libsqlite             | sqlite           | required | cmake:sqlite3
sqlite3               | sqlite                | sqlite           | required | cmd:sqlite3
libgtest-dev          | gtest                 | googletest       | required | cmake:gtest
libbenchmark-dev      | benchmark             | benchmark        | required | cmake:benchmark
libcli11-dev          | cli11                 | cli11            | required | cmake:cli11
libspdlog-dev         | spdlog                | spdlog           | required | cmake:spdlog
nlohmann-json3-dev    | nlohmann_json         | nlohmann-json    | required | cmake:nlohmann_json
zlib1g-dev            | zlib                  | zlib             | required | cmake:zlib
libturbojpeg0-dev     | libjpeg-turbo         | libjpeg-turbo    | required | cmake:turbojpeg
uuid-dev              | libuuid               | util-linux-uuid  | required | cmake:uuid
libssl-dev            | openssl               | openssl          | required | cmake:openssl
curl                  | curl                  | curl             | required | cmd:curl
gnuplot-nox           | gnuplot               | gnuplot          | required | cmd:gnuplot
dataset-fashion-mnist | -                     | -                | optional | file:/usr/share/datasets/fashion-mnist
slurm-wlm             | -                     | slurm            | optional | cmd:sbatch
munge                 | -                     | munge            | optional | cmd:munged
clang                 | clangxx               | llvm             | optional | cmd:clang++
libclang-rt-14-dev    | compiler-rt           | llvm             | optional | fuzzer
llvm-14               | llvm-tools            | llvm             | optional | cmd:llvm-symbolizer
"

# Can this process install Debian packages? Root, or sudo without a password.
cedar_can_apt() {
  [ "${CEDAR_SETUP_NO_APT:-0}" != 1 ] && command -v apt-get > /dev/null || return 1
  [ "$(id -u)" -eq 0 ] && return 0
  command -v sudo > /dev/null && sudo -n true 2> /dev/null
}

# Prints "NAME found|missing" for each CMake lookup of cmake/CedarDependencies.cmake; nothing
# when CMake or a C++ compiler cannot run.
cedar_probe_cmake() {
  command -v cmake > /dev/null || return 0
  local dir generator=()
  dir=$(mktemp -d "${TMPDIR:-/tmp}/cedar-probe.XXXXXX")
  command -v ninja > /dev/null && generator=(-G Ninja)
  # shellcheck disable=SC2086  # CEDAR_CMAKE_ARGS is a list of arguments, as in build.sh;
  # an empty array expands this way under set -u in bash before 4.4 too
  cmake -S "$CEDAR_SETUP_DIR/../cmake/probe" -B "$dir" ${generator[@]+"${generator[@]}"} \
    ${CEDAR_CMAKE_ARGS:-} 2>&1 |
    sed -n 's/^-- cedar-probe //p' || true
  rm -rf "$dir"
}

# found / missing for one "how to look for it" entry; $probe holds cedar_probe_cmake's lines.
cedar_look_for() {
  local how="$1" what="${1#*:}"
  case "$how" in
    cmd:*) command -v "$what" > /dev/null ;;
    python:*) command -v python3 > /dev/null && python3 -c "import $what" 2> /dev/null ;;
    file:*) [ -e "$what" ] ;;
    cmake:*) grep -qx "$what found" <<< "$probe" ;;
    fuzzer)  # libFuzzer's runtime among clang's
      command -v clang++ > /dev/null &&
        [ -n "$(find "$(clang++ -print-resource-dir)" -name 'libclang_rt.fuzzer*.a' 2> /dev/null)" ]
      ;;
  esac
}

# The table's rows, fields trimmed: debian|conda-forge|spack|need|how.
cedar_rows() {
  echo "$CEDAR_PACKAGES" | awk -F'|' 'NF > 1 { for (i = 1; i <= NF; i++) gsub(/^ +| +$/, "", $i);
    print $1 "|" $2 "|" $3 "|" $4 "|" $5 }'
}

# The lookup by what the build finds: a table of what is missing; exits 1 if any is required.
cedar_check_without_apt() {
  local probe deb conda spack need how conda_names="" spack_names="" required=0 optional=0
  local table=""
  probe=$(cedar_probe_cmake)
  echo "[setup] $1: not installing Debian packages; looking for each the way the build does"
  if [ -z "$probe" ] && command -v cmake > /dev/null; then
    echo "[setup] CMake could not configure cmake/probe/ (no C++ compiler?): no library can be found"
  fi
  while IFS='|' read -r deb conda spack need how; do
    cedar_look_for "$how" && continue
    table+=$(printf '  %-22s %-24s %-16s %-9s %s' "$deb" "$conda" "$spack" "$need" "$how")$'\n'
    if [ "$need" = required ]; then
      required=$((required + 1))
      [ "$conda" = - ] || conda_names+="$conda "
      [ "$spack" = - ] || spack_names+="$spack "
    else
      optional=$((optional + 1))
    fi
  done < <(cedar_rows)
  if ((required + optional)); then
    echo "[setup] not found:"
    printf '  %-22s %-24s %-16s %-9s %s\n' "debian" "conda-forge" "spack" "need" "looked for as"
    printf '%s' "$table"
  fi
  if ((required)); then
    conda_names=$(tr ' ' '\n' <<< "$conda_names" | sed '/^$/d' | sort -u | paste -sd' ')
    spack_names=$(tr ' ' '\n' <<< "$spack_names" | sed '/^$/d' | sort -u | paste -sd' ')
    echo "[setup] $required required package(s) missing. To install them without root, either:"
    echo "  conda create -n cedar -c conda-forge $conda_names && conda activate cedar"
    echo "  spack install $spack_names && spack load $spack_names"
    echo "[setup] then run this again (CMake searches \$CONDA_PREFIX and CMAKE_PREFIX_PATH)"
    exit 1
  fi
  echo "[setup] every required package found"
}

cedar_dpkg_missing() {  # the Debian packages dpkg does not list as installed (one dpkg-query)
  local -a all
  mapfile -t all < <(cedar_rows | cut -d'|' -f1)
  dpkg-query -W -f='${Package} ${Status}\n' "${all[@]}" 2> /dev/null |
    awk -v all="${all[*]}" '$2 " " $3 " " $4 == "install ok installed" { ok[$1] = 1 }
      END { n = split(all, p, " "); for (i = 1; i <= n; i++) if (!(p[i] in ok)) print p[i] }'
}

if ! command -v dpkg-query > /dev/null || ! command -v apt-get > /dev/null; then
  cedar_check_without_apt "no apt-get"
elif [ "${CEDAR_SETUP_NO_APT:-0}" = 1 ]; then
  cedar_check_without_apt "CEDAR_SETUP_NO_APT=1"
else
  mapfile -t missing < <(cedar_dpkg_missing)
  if ((${#missing[@]})); then
    if cedar_can_apt; then
      echo "[setup] installing ${missing[*]}"
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
      cedar_check_without_apt "not root and no password-less sudo (${#missing[@]} Debian packages not installed)"
    fi
  fi
fi

# A Python that can make virtual environments: the system one unless another is on PATH.
PY="${CEDAR_BOOTSTRAP_PYTHON:-$(command -v python3)}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
# The installed version from the package's metadata: importing torch takes seconds.
cedar_torch_version() { "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null; }
have=$(cedar_torch_version || true)
if [ "${have%%+*}" != "$TORCH_VERSION" ]; then
  echo "[setup] installing torch==$TORCH_VERSION into $VENV (large download, once per machine)"
  "$VENV/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" numpy
  have=$(cedar_torch_version)
fi
echo "[setup] ready: torch $have in $VENV"
