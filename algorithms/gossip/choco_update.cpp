#include "algorithms/gossip/choco_update.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_CHOCO_AVX2 1
#include <immintrin.h>
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

template <bool Fused>
void update_portable(const float* q_self, const float* const* q, int k, float w, float gamma,
                     float* hat, float* mixed, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = q_self[i];
    float sum = s;
    for (int j = 0; j < k; ++j) sum = sum + q[j][i];
    const float h = hat[i] + s;
    hat[i] = h;
    const float m = mul_add<Fused>(mixed[i], w, sum);
    mixed[i] = m;
    x[i] = mul_add<Fused>(x[i], gamma, m - h);
  }
}

#if defined(CEDAR_CHOCO_AVX2)
// Eight elements at a time, each lane the portable loop's operations with the fused rounding;
// returns the count done. (The separate rounding stays with the portable loop: in a function
// compiled for FMA the compiler may contract a multiply and an add, intrinsics or not.)
__attribute__((target("avx2,fma"))) int64_t update_fused_avx2(const float* q_self,
                                                              const float* const* q, int k,
                                                              float w, float gamma, float* hat,
                                                              float* mixed, float* x, int64_t n) {
  const __m256 wv = _mm256_set1_ps(w), gv = _mm256_set1_ps(gamma);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 s = _mm256_loadu_ps(q_self + i);
    __m256 sum = s;
    for (int j = 0; j < k; ++j) sum = _mm256_add_ps(sum, _mm256_loadu_ps(q[j] + i));
    const __m256 h = _mm256_add_ps(_mm256_loadu_ps(hat + i), s);
    _mm256_storeu_ps(hat + i, h);
    const __m256 m = _mm256_fmadd_ps(wv, sum, _mm256_loadu_ps(mixed + i));
    _mm256_storeu_ps(mixed + i, m);
    _mm256_storeu_ps(x + i, _mm256_fmadd_ps(gv, _mm256_sub_ps(m, h), _mm256_loadu_ps(x + i)));
  }
  return i;
}
#endif

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
  static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avx2") &&
                                                     __builtin_cpu_supports("fma"));
  return yes;
#else
  return false;
#endif
}

namespace simd_impl {

void choco_update(bool avx2, MulAdd rounding, const float* q_self, const float* const* q, int k,
                  float w, float gamma, float* hat, float* mixed, float* x, int64_t n) {
  const bool fused = rounding == MulAdd::kFused;
  int64_t done = 0;
#if defined(CEDAR_CHOCO_AVX2)
  if (avx2 && fused) done = update_fused_avx2(q_self, q, k, w, gamma, hat, mixed, x, n);
#endif
  if (done == n) return;
  std::vector<const float*> rest(q, q + k);  // the rest from element `done`
  for (const float*& r : rest) r += done;
  if (fused) {
    update_portable<true>(q_self + done, rest.data(), k, w, gamma, hat + done, mixed + done,
                          x + done, n - done);
  } else {
    update_portable<false>(q_self + done, rest.data(), k, w, gamma, hat + done, mixed + done,
                           x + done, n - done);
  }
}

}  // namespace simd_impl

void choco_update(MulAdd rounding, const float* q_self, const float* const* q, int k, float w,
                  float gamma, float* hat, float* mixed, float* x, int64_t n) {
  simd_impl::choco_update(choco_update_avx2_supported(), rounding, q_self, q, k, w, gamma, hat,
                          mixed, x, n);
}

}  // namespace cedar
