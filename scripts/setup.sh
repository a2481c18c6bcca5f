#!/usr/bin/env bash
# Installs everything Cedar needs on Debian 12: system packages (apt) and LibTorch from
# PyPI's torch wheel in a virtual environment shared by every checkout on this machine.
# Safe to run again: installed packages and an up-to-date environment are skipped.
set -euo pipefail

TORCH_VERSION="${CEDAR_TORCH_VERSION:-2.11.0}"
export CEDAR_HOME="${CEDAR_HOME:-$HOME/.cache/cedar}"
VENV="${CEDAR_VENV:-$CEDAR_HOME/venv}"

APT_PACKAGES=(build-essential cmake ninja-build ccache clang-format python3 python3-venv python3-pip
  libopenmpi-dev openmpi-bin libyaml-cpp-dev libsqlite3-dev sqlite3 libgtest-dev libbenchmark-dev
  libcli11-dev libspdlog-dev nlohmann-json3-dev zlib1g-dev libturbojpeg0-dev uuid-dev gnuplot-nox
  libssl-dev curl  # `cedar data fetch`: checksums (OpenSSL's libcrypto), downloads
  dataset-fashion-mnist
  slurm-wlm munge  # a local one-node Slurm for `cedar sbatch` and its test (scripts/slurm/)
  clang libclang-rt-14-dev llvm-14)  # the last line: scripts/fuzz.sh (libFuzzer, llvm-symbolizer)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A Python that can make virtual environments: the system one unless another is on PATH.
PY="${CEDAR_BOOTSTRAP_PYTHON:-$(command -v python3)}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
have=$("$VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)
if [ "${have%%+*}" != "$TORCH_VERSION" ]; then
  echo "[setup] installing torch==$TORCH_VERSION into $VENV (large download, once per machine)"
  "$VENV/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" numpy
fi
echo "[setup] ready: torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') in $VENV"
