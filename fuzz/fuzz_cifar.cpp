// CIFAR-10 / CIFAR-100 binary batches. Input: <u8 flags><batch file>; flags bit 0 picks CIFAR-100
// (test.bin) over CIFAR-10 (test_batch.bin), bits 1-3 a record limit (0: all).
// Every input must read or throw DataError; what reads must be self-consistent, and the probe
// (the preflight's check) must accept it with the same shape.
#include <cstdint>
#include <cstdlib>

#include "datasets/readers.h"
#include "fuzz/fuzz_temp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool hundred = data[0] & 1;
  const int64_t limit = (data[0] >> 1) & 7;
  const auto dir = cedar::fuzz::scratch_dir() / (hundred ? "cifar100" : "cifar10");
  cedar::fuzz::write_file(dir / (hundred ? "test.bin" : "test_batch.bin"), data + 1, size - 1);
  const cedar::ProbeResult probe =
      cedar::probe_cifar(dir.string(), hundred ? 100 : 10, false, limit);
  try {
    const cedar::ImageSet set = cedar::read_cifar(dir.string(), hundred ? 100 : 10, false, limit);
    if (!probe.ok() || probe.shape.count != set.count) std::abort();
    if (set.count < 1 || (limit > 0 && set.count > limit) ||
        set.pixels.size() != static_cast<size_t>(set.count) * 3072 ||
        set.labels.size() != static_cast<size_t>(set.count))
      std::abort();
    for (int64_t label : set.labels)
      if (label < 0 || label >= set.num_classes) std::abort();
  } catch (const cedar::DataError&) {
  }
  return 0;
}
