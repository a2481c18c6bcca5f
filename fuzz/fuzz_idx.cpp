// IDX images + labels files (raw or gzipped, told apart by magic as the reader does).
// Input: <u8 limit><u32 little-endian length of the images file><images file><labels file>.
// Every input must read or throw DataError; what reads must be self-consistent, and the probe
// (the preflight's check) must accept it with the same shape.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "datasets/readers.h"
#include "fuzz/fuzz_temp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const int64_t limit = data[0] % 8;
  uint32_t images_len = 0;
  std::memcpy(&images_len, data + 1, 4);
  data += 5;
  size -= 5;
  if (images_len > size) images_len = static_cast<uint32_t>(size);
  const auto images = cedar::fuzz::scratch_dir() / "images-idx3-ubyte";
  const auto labels = cedar::fuzz::scratch_dir() / "labels-idx1-ubyte";
  cedar::fuzz::write_file(images, data, images_len);
  cedar::fuzz::write_file(labels, data + images_len, size - images_len);
  const cedar::ProbeResult probe = cedar::probe_idx(images.string(), labels.string(), limit);
  try {
    const cedar::ImageSet set = cedar::read_idx(images.string(), labels.string(), limit);
    if (!probe.ok() || probe.shape.count != set.count || probe.shape.height != set.height ||
        probe.shape.width != set.width)
      std::abort();
    const bool ok = set.count > 0 && (limit == 0 || set.count <= limit) && set.channels == 1 &&
                    set.pixels.size() == static_cast<size_t>(set.count * set.image_bytes()) &&
                    set.labels.size() == static_cast<size_t>(set.count);
    if (!ok) {
      std::fprintf(stderr, "inconsistent IDX set: count %lld, %zu pixel bytes\n",
                   static_cast<long long>(set.count), set.pixels.size());
      std::abort();
    }
    for (int64_t label : set.labels)
      if (label < 0 || label >= set.num_classes) std::abort();
  } catch (const cedar::DataError&) {
  }
  return 0;
}
