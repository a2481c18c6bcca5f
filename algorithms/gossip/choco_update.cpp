#include "algorithms/gossip/choco_update.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "algorithms/codecs/sign_lanes.h"

#if defined(CEDAR_SIGN_LANES)
#define CEDAR_CHOCO_AVX2 1
#endif

namespace cedar {
namespace {

// self + alpha·other with the product rounded first (the build's baseline target has no fused
// multiply-add instruction, so the compiler cannot contract the two).
inline float separate(float self, float alpha, float other) {
  const float product = alpha * other;
  return self + product;
}

template <bool Fused>
inline float mul_add(float self, float alpha, float other) {
  if constexpr (Fused) return std::fma(alpha, other, self);
  return separate(self, alpha, other);
}

// Element i of the differences d.
template <bool Bits>
inline float value(const Differences& d, int64_t i) {
  if constexpr (Bits) return (d.bits[i / 8] >> (i % 8)) & 1 ? d.one : d.zero;
  return d.values[i];
}

template <bool Fused, bool Bits>
void update_portable(const Differences& self, const Differences* others, int k, float w,
                     float gamma, float* hat, float* mixed, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = value<Bits>(self, i);
    float sum = s;
    for (int j = 0; j < k; ++j) sum = sum + value<Bits>(others[j], i);
    const float h = hat[i] + s;
    hat[i] = h;
    const float m = mul_add<Fused>(mixed[i], w, sum);
    mixed[i] = m;
    x[i] = mul_add<Fused>(x[i], gamma, m - h);
  }
}

#if defined(CEDAR_CHOCO_AVX2)
#define CEDAR_CHOCO_TARGET __attribute__((target("avx2,fma")))

// Eight elements from their (decoded) differences, each lane the portable loop's operations with
// the fused rounding. (The separate rounding stays with the portable loop: in a function compiled
// for FMA the compiler may contract a multiply and an add, intrinsics or not.)
CEDAR_CHOCO_TARGET __attribute__((always_inline)) inline void update8(__m256 s, __m256 sum,
                                                                      __m256 w, __m256 gamma,
                                                                      float* hat, float* mixed,
                                                                      float* x) {
  const __m256 h = _mm256_add_ps(_mm256_loadu_ps(hat), s);
  _mm256_storeu_ps(hat, h);
  const __m256 m = _mm256_fmadd_ps(w, sum, _mm256_loadu_ps(mixed));
  _mm256_storeu_ps(mixed, m);
  _mm256_storeu_ps(x, _mm256_fmadd_ps(gamma, _mm256_sub_ps(m, h), _mm256_loadu_ps(x)));
}

// Values: eight elements at a time; returns the count done.
CEDAR_CHOCO_TARGET int64_t update_values_avx2(const Differences& self, const Differences* others,
                                              int k, float w, float gamma, float* hat, float* mixed,
                                              float* x, int64_t n) {
  const __m256 wv = _mm256_set1_ps(w), gv = _mm256_set1_ps(gamma);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 s = _mm256_loadu_ps(self.values + i);
    __m256 sum = s;
    for (int j = 0; j < k; ++j) sum = _mm256_add_ps(sum, _mm256_loadu_ps(others[j].values + i));
    update8(s, sum, wv, gv, hat + i, mixed + i, x + i);
  }
  return i;
}

// Bits: whole words of 32 elements, each decoded in registers; returns the count done.
CEDAR_CHOCO_TARGET int64_t update_bits_avx2(const Differences& self, const Differences* others,
                                            int k, float w, float gamma, float* hat, float* mixed,
                                            float* x, int64_t n) {
  const __m256 wv = _mm256_set1_ps(w), gv = _mm256_set1_ps(gamma);
  const int64_t words = n / 32;
  for (int64_t v = 0; v < words; ++v) {
    auto word = [&](const Differences& d) CEDAR_CHOCO_TARGET {
      return _mm256_set1_epi32(static_cast<int>(sign_lanes::word(d.bits, v)));
    };
    const __m256i own = word(self);
    for (int g = 0; g < 4; ++g) {
      const __m256 s = sign_lanes::values(sign_lanes::mask(own, g), _mm256_set1_ps(self.one),
                                          _mm256_set1_ps(self.zero));
      __m256 sum = s;
      for (int j = 0; j < k; ++j)
        sum = _mm256_add_ps(
            sum, sign_lanes::values(sign_lanes::mask(word(others[j]), g),
                                    _mm256_set1_ps(others[j].one), _mm256_set1_ps(others[j].zero)));
      const int64_t i = 32 * v + 8 * g;
      update8(s, sum, wv, gv, hat + i, mixed + i, x + i);
    }
  }
  return 32 * words;
}
#endif

// The differences from element `done` on (a multiple of 8).
Differences from(const Differences& d, int64_t done) {
  Differences r = d;
  if (r.values) r.values += done;
  if (r.bits) r.bits += done / 8;
  return r;
}

// The probe: self = −(1 + 2⁻¹¹)·2^e, other = (1 + 2⁻¹²)·2^e, alpha = 1 + 2⁻¹². The exact product
// (1 + 2⁻¹¹ + 2⁻²⁴)·2^e is a tie between two fp32 values and rounds to (1 + 2⁻¹¹)·2^e, so the
// separate form gives 0 and the fused one 2^(e−24): every element tells the two apart. 1055
// elements leave 15 and 31 to the scalar loops after LibTorch's AVX2 and AVX-512 bodies (two
// vectors per iteration).
std::optional<MulAdd> probe() {
  constexpr int64_t kLength = 1055;
  const float alpha = 1.0f + 0x1.0p-12f;
  at::Tensor self = at::empty({kLength}), other = at::empty({kLength});
  float* s = self.data_ptr<float>();
  float* o = other.data_ptr<float>();
  for (int64_t i = 0; i < kLength; ++i) {
    const float scale = std::ldexp(1.0f, static_cast<int>(i % 16) - 8);
    s[i] = -(1.0f + 0x1.0p-11f) * scale;
    o[i] = (1.0f + 0x1.0p-12f) * scale;
  }
  at::Tensor got = self.clone();
  got.add_(other, static_cast<double>(alpha));
  const float* g = got.data_ptr<float>();
  bool fused = true, apart = true;
  for (int64_t i = 0; i < kLength; ++i) {
    fused = fused && g[i] == std::fma(alpha, o[i], s[i]);
    apart = apart && g[i] == separate(s[i], alpha, o[i]);
  }
  if (fused) return MulAdd::kFused;
  if (apart) return MulAdd::kSeparate;
  return std::nullopt;
}

}  // namespace

std::optional<MulAdd> libtorch_add_alpha() {
  static const std::optional<MulAdd> found = probe();
  return found;
}

bool choco_update_avx2_supported() {
#if defined(CEDAR_CHOCO_AVX2)
  static const bool yes =
      (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  return yes;
#else
  return false;
#endif
}

namespace simd_impl {

void choco_update(bool avx2, MulAdd rounding, const Differences& q_self, const Differences* others,
                  int k, float w, float gamma, float* hat, float* mixed, float* x, int64_t n) {
  if (n <= 0) return;  // (the storage of empty tensors may be null)
  const bool bits = q_self.bits != nullptr;
  auto of_kind = [bits](const Differences& d) {
    return bits ? d.bits != nullptr && d.values == nullptr : d.values != nullptr && !d.bits;
  };
  bool same = of_kind(q_self);
  for (int j = 0; j < k; ++j) same = same && of_kind(others[j]);
  if (!same)
    throw std::invalid_argument(
        "choco_update: the differences must all be values or all be bits, each one or the other");
  const bool fused = rounding == MulAdd::kFused;
  int64_t done = 0;
#if defined(CEDAR_CHOCO_AVX2)
  if (avx2 && fused)
    done = bits ? update_bits_avx2(q_self, others, k, w, gamma, hat, mixed, x, n)
                : update_values_avx2(q_self, others, k, w, gamma, hat, mixed, x, n);
#endif
  if (done == n) return;
  const Differences self_rest = from(q_self, done);
  std::vector<Differences> rest;
  for (int j = 0; j < k; ++j) rest.push_back(from(others[j], done));
  auto portable = [&](auto fused_tag, auto bits_tag) {
    update_portable<decltype(fused_tag)::value, decltype(bits_tag)::value>(
        self_rest, rest.data(), k, w, gamma, hat + done, mixed + done, x + done, n - done);
  };
  using T = std::true_type;
  using F = std::false_type;
  if (fused) {
    bits ? portable(T{}, T{}) : portable(T{}, F{});
  } else {
    bits ? portable(F{}, T{}) : portable(F{}, F{});
  }
}

}  // namespace simd_impl

void choco_update(MulAdd rounding, const Differences& q_self, const Differences* others, int k,
                  float w, float gamma, float* hat, float* mixed, float* x, int64_t n) {
  simd_impl::choco_update(choco_update_avx2_supported(), rounding, q_self, others, k, w, gamma, hat,
                          mixed, x, n);
}

}  // namespace cedar
