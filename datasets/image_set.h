#pragma once
// An in-memory labelled image set as uint8 pixels (N x C x H x W, channel-planar), the common
// form every reader produces. No LibTorch here: readers stay cheap to compile and to fuzz.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cedar {

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

  int64_t image_bytes() const { return channels * height * width; }
  const uint8_t* image(int64_t i) const { return pixels.data() + i * image_bytes(); }
};

// Per-channel normalisation constants for pixel/255.
struct Normalization {
  std::vector<float> mean;
  std::vector<float> std;
};

}  // namespace cedar
