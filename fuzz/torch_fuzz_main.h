#pragma once
// The libFuzzer entry points of the LibTorch targets (fuzz_qsgd, fuzz_sparse, fuzz_grace_codecs):
// LibTorch runs on one thread (inputs are small; a thread pool would only slow each one down), and
// every input goes to fuzz_input, which the including target defines. Include it in that one file
// only: it defines the entry points.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>

namespace cedar::fuzz {
void fuzz_input(FuzzedDataProvider& in);
}  // namespace cedar::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  cedar::fuzz::fuzz_input(in);
  return 0;
}
