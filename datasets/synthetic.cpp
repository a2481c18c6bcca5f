// Deterministic synthetic image set for quick runs and tests. Each class has a fixed random
// pattern: a coarse 4x4 grid of random intensities per channel, bilinearly smoothed to the full
// size, so classes differ in low-frequency colour layout that any model (linear or conv with
// pooling) can learn. A sample is its class pattern plus Gaussian noise (sigma 40), clipped to
// 0..255. Labels cycle 0, 1, ..., K-1 so every prefix of the set is balanced. Everything is drawn
// from one std::mt19937_64 seeded by `seed`, with our own bounded draws and Box-Muller so the
// output is identical across standard libraries.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/readers.h"

namespace cedar {
namespace {

constexpr int kGrid = 4;  // coarse pattern cells per side
constexpr double kNoiseSigma = 40.0;
constexpr double kTwoPi = 6.283185307179586;
constexpr int64_t kMaxSize = 4096;  // as read_image_folder's image_size
constexpr int64_t kMaxChannels = 64;

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

class Gaussian {
 public:
  double operator()(std::mt19937_64& rng) {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform01(rng);  // (0, 1]
    const double u2 = uniform01(rng);
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(kTwoPi * u2);
    has_spare_ = true;
    return r * std::cos(kTwoPi * u2);
  }
  // Moves past the next n values exactly as n calls would, drawing no value that is not returned
  // later: whole pairs are skipped on the generator (two draws each).
  void skip(std::mt19937_64& rng, uint64_t n) {
    if (n > 0 && has_spare_) {
      has_spare_ = false;
      --n;
    }
    rng.discard(2 * (n / 2));
    if (n % 2 == 1) (*this)(rng);
  }

 private:
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// A size x size plane bilinearly interpolated from a kGrid x kGrid grid of values in [32, 224].
std::vector<double> smooth_plane(std::mt19937_64& rng, int64_t size) {
  double grid[kGrid][kGrid];
  for (auto& row : grid)
    for (double& v : row) v = 32.0 + 192.0 * uniform01(rng);
  std::vector<double> plane(static_cast<size_t>(size * size));
  const double step = size > 1 ? static_cast<double>(kGrid - 1) / static_cast<double>(size - 1) : 0;
  for (int64_t y = 0; y < size; ++y) {
    const double gy = static_cast<double>(y) * step;
    const int y0 = std::min(static_cast<int>(gy), kGrid - 2);
    const double fy = gy - y0;
    for (int64_t x = 0; x < size; ++x) {
      const double gx = static_cast<double>(x) * step;
      const int x0 = std::min(static_cast<int>(gx), kGrid - 2);
      const double fx = gx - x0;
      const double top = grid[y0][x0] * (1 - fx) + grid[y0][x0 + 1] * fx;
      const double bottom = grid[y0 + 1][x0] * (1 - fx) + grid[y0 + 1][x0 + 1] * fx;
      plane[static_cast<size_t>(y * size + x)] = top * (1 - fy) + bottom * fy;
    }
  }
  return plane;
}

}  // namespace

ImageSet make_synthetic(int64_t count, int64_t channels, int64_t size, int64_t num_classes,
                        uint64_t seed) {
  return make_synthetic_range(0, count, channels, size, num_classes, seed);
}

ImageSet make_synthetic_range(int64_t first, int64_t count, int64_t channels, int64_t size,
                              int64_t num_classes, uint64_t seed) {
  const std::string got =
      "count=" + std::to_string(count) + " channels=" + std::to_string(channels) +
      " size=" + std::to_string(size) + " num_classes=" + std::to_string(num_classes);
  if (count < 0 || channels <= 0 || size <= 0 || num_classes <= 0 || num_classes > 100000)
    throw std::invalid_argument(
        "make_synthetic: need count >= 0, channels > 0, size > 0, 0 < num_classes <= 100000; got " +
        got);
  if (first < 0 || first > count)
    throw std::invalid_argument("make_synthetic: the first image " + std::to_string(first) +
                                " is outside [0, " + std::to_string(count) + "]; " + got);
  // Bounded before any product is formed: channels x size^2 x count must not wrap (a size of
  // 2^32 squares to 0 in 64 bits and the planes would be written past their end).
  if (size > kMaxSize || channels > kMaxChannels)
    throw std::invalid_argument("make_synthetic: " + got + ": size must be in [1, " +
                                std::to_string(kMaxSize) + "] and channels in [1, " +
                                std::to_string(kMaxChannels) + "]");
  const int64_t image = channels * size * size;
  if (count > std::numeric_limits<int64_t>::max() / image)
    throw std::invalid_argument("make_synthetic: " + got + ": count x channels x size^2 overflows");
  std::mt19937_64 rng(seed ^ 0x5EEDC0DE5EEDC0DEull);
  std::vector<std::vector<double>> patterns(static_cast<size_t>(num_classes));
  for (auto& pattern : patterns) {
    pattern.reserve(static_cast<size_t>(image));
    for (int64_t c = 0; c < channels; ++c) {
      const std::vector<double> plane = smooth_plane(rng, size);
      pattern.insert(pattern.end(), plane.begin(), plane.end());
    }
  }

  ImageSet set;
  set.name = "synthetic";
  set.count = count - first;
  set.channels = channels;
  set.height = size;
  set.width = size;
  set.num_classes = num_classes;
  set.pixels.resize(static_cast<size_t>(set.count * image));
  set.labels.resize(static_cast<size_t>(set.count));
  Gaussian gauss;
  gauss.skip(rng, static_cast<uint64_t>(first * image));  // one noise value per pixel
  for (int64_t i = first; i < count; ++i) {
    const int64_t label = i % num_classes;
    set.labels[static_cast<size_t>(i - first)] = label;
    const auto& pattern = patterns[static_cast<size_t>(label)];
    uint8_t* out = set.pixels.data() + (i - first) * image;
    for (int64_t p = 0; p < image; ++p) {
      const double v = pattern[static_cast<size_t>(p)] + kNoiseSigma * gauss(rng);
      out[p] = static_cast<uint8_t>(std::clamp(std::round(v), 0.0, 255.0));
    }
  }
  return set;
}

}  // namespace cedar
