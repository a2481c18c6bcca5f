#!/usr/bin/env bash
# End to end: LibTorch's CUDA library is loaded where an NVIDIA driver is installed and nowhere
# else (runner/cli/torch_cuda.h): without a driver, no `cedar` process loads libtorch_cuda.so
# (its static initialisation costs each process about 0.15 s of CPU time), a run on the CPU is
# unaffected, and asking for a GPU gives the clear error it gave before; with a driver, every
# `cedar` process loads it before it starts. Read from the dynamic linker's own log (LD_DEBUG).
# Usage: torch_cuda_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-torch-cuda.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The libraries a command loads, one line per library the dynamic linker mapped.
loaded() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep 'generating link map' | sed -n 's/.*file=\([^ ]*\) .*/\1/p'; }
libs=$(loaded "$CEDAR" list)
check "cedar list loads LibTorch (libtorch_cpu.so)" contains "$libs" "libtorch_cpu.so"
if ! grep -q 'torch_cuda' <<< "$(ldd "$CEDAR")$libs" && ! grep -q 'libcudart' <<< "$(ldd "$CEDAR")"; then
  echo "note: this LibTorch has no CUDA; nothing more to check"
  finish; exit
fi
cat > "$WORK/tiny.yaml" <<YAML
name: tiny
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 256, test_limit: 100}
train: {epochs: 1, batch_size: 32, threads: 1, seed: 1, checkpoint: false}
optimizer: {lr: 0.05, schedule: constant}
algorithm: dense
YAML
if grep -q '^libcuda.so.1$' <<< "$libs"; then
  echo "note: an NVIDIA driver is installed here"
  check "with a driver: cedar list loads libtorch_cuda.so" contains "$libs" "libtorch_cuda.so"
  run_libs=$(loaded "$CEDAR" run "$WORK/tiny.yaml" --db "$WORK/a.db" --quiet)
  check "with a driver: cedar run loads libtorch_cuda.so" contains "$run_libs" "libtorch_cuda.so"
else
  check "without a driver: cedar list does not load libtorch_cuda.so" equals \
    "$(grep -c 'libtorch_cuda' <<< "$libs")" 0
  run_libs=$(loaded "$CEDAR" run "$WORK/tiny.yaml" --db "$WORK/a.db" --quiet)
  check "without a driver: a CPU run does not load it either" equals \
    "$(grep -c 'libtorch_cuda' <<< "$run_libs")" 0
  check "... and completes" equals "$(sqlite3 "$WORK/a.db" "SELECT status FROM runs")" completed
  out=$("$CEDAR" run "$WORK/tiny.yaml" --db "$WORK/b.db" --set train.device=cuda 2>&1); rc=$?
  check "without a driver: train.device cuda fails" greater "$rc" 0
  check "... with the clear error" contains "$out" "train.device: cuda requested but no GPU is visible"
fi
finish
