#pragma once
// A labelled image set as uint8 pixels (N x C x H x W, channel-planar), the common form every
// reader produces: in memory, or (a lazy ImageFolder set) as files decoded when an image is read.
// No LibTorch here: readers stay cheap to compile and to fuzz.
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace cedar {

// Where the images of a set that is not in memory come from: decode(i, dst) writes image i's
// C x H x W bytes to dst, exactly the bytes the eager reader would have kept. Safe to call from
// several threads at once; throws DataError (datasets/readers.h) naming the file at fault.
class ImageFiles {
 public:
  virtual ~ImageFiles() = default;
  virtual void decode(int64_t i, uint8_t* dst) const = 0;
};

struct ImageSet {
  std::string name;  // e.g. "cifar10/train"
  int64_t count = 0;
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t num_classes = 0;
  std::vector<uint8_t> pixels;           // count * channels * height * width, image i at i*C*H*W
  std::vector<int64_t> labels;           // count entries in [0, num_classes)
  std::vector<std::string> class_names;  // optional (ImageFolder: the wnids)
  // Set for a set kept as files (pixels then empty): images are decoded when read.
  std::shared_ptr<const ImageFiles> files;

  int64_t image_bytes() const { return channels * height * width; }
  bool in_memory() const { return files == nullptr; }
  // Image i's pixels; in-memory sets only.
  const uint8_t* image(int64_t i) const { return pixels.data() + i * image_bytes(); }
  // Image i's pixels into dst (image_bytes() bytes), from memory or decoded from its file.
  void copy_image(int64_t i, uint8_t* dst) const {
    if (files)
      files->decode(i, dst);
    else
      std::memcpy(dst, image(i), static_cast<size_t>(image_bytes()));
  }
};

// Per-channel normalisation constants for pixel/255.
struct Normalization {
  std::vector<float> mean;
  std::vector<float> std;
};

}  // namespace cedar
