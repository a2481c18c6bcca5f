#include "datasets/image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace cedar {
namespace {

// Antialiased bilinear taps for output samples [offset, offset + n) of a resize from `in` to
// `out` samples: a triangle filter widened by the downscale factor, as PIL's BILINEAR does.
struct Taps {
  std::vector<int> first;
  std::vector<std::vector<float>> weights;
};

Taps make_taps(int in, int out, int offset, int n) {
  const double scale = static_cast<double>(in) / out;
  const double support = std::max(scale, 1.0);
  Taps taps;
  for (int i = offset; i < offset + n; ++i) {
    const double centre = (i + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(std::floor(centre - support)));
    const int hi = std::min(in, static_cast<int>(std::ceil(centre + support)));
    std::vector<float> w;
    double total = 0.0;
    for (int j = lo; j < hi; ++j) {
      const double v = std::max(0.0, 1.0 - std::abs(j + 0.5 - centre) / support);
      w.push_back(static_cast<float>(v));
      total += v;
    }
    if (total <= 0.0) {  // cannot happen for in >= 1, kept for safety
      w.assign(1, 1.0f);
      taps.first.push_back(std::min(std::max(0, static_cast<int>(centre)), in - 1));
    } else {
      for (auto& v : w) v = static_cast<float>(v / total);
      taps.first.push_back(lo);
    }
    taps.weights.push_back(std::move(w));
  }
  return taps;
}

}  // namespace

void resize_crop(const Rgb& src, int size, uint8_t* dst) {
  int rw = size, rh = size;
  if (src.width < src.height)
    rh = std::max(
        size, static_cast<int>(std::lround(static_cast<double>(src.height) * size / src.width)));
  else
    rw = std::max(
        size, static_cast<int>(std::lround(static_cast<double>(src.width) * size / src.height)));
  const Taps tx = make_taps(src.width, rw, (rw - size) / 2, size);
  const Taps ty = make_taps(src.height, rh, (rh - size) / 2, size);

  // The crop's output rows read source rows [y0, y1) only: about size x src.height / rh of them
  // plus the filter's support, never more than the source has.
  int y0 = src.height, y1 = 0;
  for (size_t i = 0; i < ty.first.size(); ++i) {
    y0 = std::min(y0, ty.first[i]);
    y1 = std::max(y1, ty.first[i] + static_cast<int>(ty.weights[i].size()));
  }

  // Horizontal pass over those rows, then the vertical pass.
  const size_t row = static_cast<size_t>(size) * 3;
  std::vector<float> tmp(static_cast<size_t>(y1 - y0) * row);
  for (int y = y0; y < y1; ++y) {
    const uint8_t* in = src.pixels.data() + static_cast<size_t>(y) * src.width * 3;
    float* o = tmp.data() + static_cast<size_t>(y - y0) * row;
    for (int x = 0; x < size; ++x) {
      float acc[3] = {0.f, 0.f, 0.f};
      const auto& w = tx.weights[static_cast<size_t>(x)];
      const uint8_t* p = in + static_cast<size_t>(tx.first[static_cast<size_t>(x)]) * 3;
      for (size_t k = 0; k < w.size(); ++k, p += 3)
        for (int c = 0; c < 3; ++c) acc[c] += w[k] * p[c];
      for (int c = 0; c < 3; ++c) o[3 * x + c] = acc[c];
    }
  }
  const size_t plane = static_cast<size_t>(size) * size;
  for (int y = 0; y < size; ++y) {
    const auto& w = ty.weights[static_cast<size_t>(y)];
    const float* base =
        tmp.data() + static_cast<size_t>(ty.first[static_cast<size_t>(y)] - y0) * row;
    for (int x = 0; x < size; ++x) {
      for (int c = 0; c < 3; ++c) {
        float acc = 0.f;
        for (size_t k = 0; k < w.size(); ++k) acc += w[k] * base[k * row + 3 * x + c];
        const float v = std::min(255.f, std::max(0.f, std::round(acc)));
        dst[c * plane + static_cast<size_t>(y) * size + x] = static_cast<uint8_t>(v);
      }
    }
  }
}

}  // namespace cedar
