#pragma once
// The resize of a decoded image for the image-folder reader (datasets/image_folder_reader.cpp):
// shorter side to the target size with an antialiased bilinear (triangle) filter, as PIL's
// BILINEAR, then the centre crop, written channel-planar.
#include <cstdint>
#include <vector>

namespace cedar {

struct Rgb {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // interleaved RGB, row-major
};

// Shorter side of `src` to `size`, centre crop size x size, written channel-planar into `dst`
// (3 * size * size bytes). Only the source rows the crop reads are resized.
void resize_crop(const Rgb& src, int size, uint8_t* dst);

}  // namespace cedar
