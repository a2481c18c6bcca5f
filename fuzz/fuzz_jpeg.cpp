// One JPEG in an ImageFolder tree, decoded (TurboJPEG), resized and centre-cropped.
// Input: <u8 side><JPEG file>; the crop side is 1 + side % 48.
// Every input must read or throw DataError; what reads must have the asked-for shape, and the
// probe (the preflight's check of the JPEG header) must accept it.
#include <cstdint>
#include <cstdlib>

#include "datasets/readers.h"
#include "fuzz/fuzz_temp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t side = 1 + data[0] % 48;
  const auto root = cedar::fuzz::scratch_dir() / "folder";
  cedar::fuzz::write_file(root / "train" / "n0" / "image.JPEG", data + 1, size - 1);
  const cedar::ProbeResult probe = cedar::probe_image_folder(root.string(), "train", 0, 0, side);
  try {
    const cedar::ImageSet set = cedar::read_image_folder(root.string(), "train", 0, 0, side);
    if (!probe.ok() || probe.shape.count != 1) std::abort();
    if (set.count != 1 || set.height != side || set.width != side ||
        set.pixels.size() != static_cast<size_t>(3 * side * side))
      std::abort();
  } catch (const cedar::DataError&) {
  }
  return 0;
}
