// The quantizers' kernels on every instruction set this CPU runs (simd.h: Isa) against the
// baseline loops, bit for bit: QSGD's norms and codes (every width, buckets that start on a byte
// and buckets that do not, sizes with ragged ends around the vector, group, chunk and bucket
// boundaries, zeros, signed zeros, NaNs, infinities and subnormals), its decoding of any payload
// (also streamed, at every output alignment), and TernGrad's statistics and codes. No write
// passes the end of a stream or an output. The baseline itself is checked against the documented
// format by qsgd_test, terngrad_test and simd_test.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/qsgd_codec.h"
#include "algorithms/codecs/simd.h"
#include "algorithms/codecs/terngrad_codec.h"

namespace cedar {
namespace {

constexpr uint8_t kGuard = 0xa5;  // the bytes after every buffer, checked untouched
constexpr int64_t kGuardBytes = 64;

// The instruction sets other than the baseline that this build and CPU run.
std::vector<Isa> wide_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx2Vaes})
    if (isa_supported(isa)) isas.push_back(isa);
  return isas;
}

std::string name(Isa isa) { return isa == Isa::kAvx2 ? "avx2" : "avx2+vaes"; }

// n standard normal values, scaled per bucket-sized stretch over many magnitudes, with zeros,
// signed zeros, subnormals and (where `special`) NaNs and infinities of both signs sprinkled in.
std::vector<float> values(int64_t n, uint64_t seed, bool special) {
  at::Tensor t = at::randn({n}, make_generator(seed, 5, n));
  std::vector<float> v(t.data_ptr<float>(), t.data_ptr<float>() + n);
  for (int64_t i = 0; i < n; ++i) v[i] *= std::ldexp(1.0f, static_cast<int>((i / 300) % 40) - 20);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float plain[] = {0.0f, -0.0f, 1e-41f, -1e-41f};
  const float odd[] = {nan, -nan, inf, -inf};
  for (int64_t i = 3; i < n; i += 97) v[i] = plain[(i / 97) % 4];
  if (special)
    for (int64_t i = 5000; i < n; i += 3001) v[i] = odd[(i / 3001) % 4];
  return v;
}

// A buffer of n bytes followed by guard bytes.
struct Guarded {
  explicit Guarded(int64_t n) : bytes(static_cast<size_t>(n + kGuardBytes), kGuard), size(n) {}
  uint8_t* data() { return bytes.data(); }
  bool guard_intact() const {
    for (int64_t i = size; i < size + kGuardBytes; ++i)
      if (bytes[i] != kGuard) return false;
    return true;
  }
  bool same(const Guarded& o) const { return std::memcmp(bytes.data(), o.bytes.data(), size) == 0; }
  std::vector<uint8_t> bytes;
  int64_t size;
};

struct Encoding {
  Guarded norms, codes;
};

Encoding encode(const QsgdFormat& f, const std::vector<float>& x, uint64_t key, Isa isa) {
  const int64_t n = static_cast<int64_t>(x.size());
  Encoding e{Guarded(4 * f.buckets(n)), Guarded(packed_bytes(n, f.bits + 1))};
  qsgd_encode(f, x.data(), n, CounterUniforms(key), reinterpret_cast<float*>(e.norms.data()),
              e.codes.data(), isa);
  return e;
}

// The decoding of `e` into a guarded output `offset` floats into a 64-byte aligned buffer.
Guarded decode(const QsgdFormat& f, Encoding& e, int64_t n, Isa isa, int64_t offset = 0) {
  at::Tensor storage = at::empty({4 * (n + offset) + kGuardBytes}, at::kByte);  // 64-byte aligned
  uint8_t* base = storage.data_ptr<uint8_t>();
  std::memset(base, kGuard, static_cast<size_t>(storage.numel()));
  qsgd_decode(f, e.codes.data(), n, reinterpret_cast<const float*>(e.norms.data()),
              reinterpret_cast<float*>(base) + offset, isa);
  Guarded out(4 * n);
  std::memcpy(out.data(), base + 4 * offset, static_cast<size_t>(4 * n + kGuardBytes));
  return out;
}

TEST(SimdKernels, TheBestInstructionSetIsSupported) {
  EXPECT_TRUE(isa_supported(Isa::kBaseline));
  EXPECT_TRUE(isa_supported(best_isa()));
  if (isa_supported(Isa::kAvx2Vaes)) {
    EXPECT_TRUE(isa_supported(Isa::kAvx2));
  }
}

TEST(SimdKernels, QsgdBytesAndValuesAreTheSameOnEveryIsa) {
  const auto isas = wide_isas();
  if (isas.empty()) GTEST_SKIP() << "no AVX2 kernels on this CPU";
  for (int bits = 1; bits <= 8; ++bits)
    for (int64_t bucket : {1, 7, 8, 24, 512, 520, 5000})
      for (int64_t n : {1, 5, 8, 31, 32, 33, 63, 100, 515, 4095, 4097, 9001, 12007})
        for (bool max_norm : {false, true}) {
          const QsgdFormat f{bits, bucket, max_norm};
          const std::vector<float> x = values(n, bits * 131 + bucket, n > 9000);
          const uint64_t key = 1000003 * n + bits;
          Encoding want = encode(f, x, key, Isa::kBaseline);
          const Guarded decoded = decode(f, want, n, Isa::kBaseline);
          for (Isa isa : isas) {
            const std::string where = name(isa) + ", " + std::to_string(bits) +
                                      " bits, buckets of " + std::to_string(bucket) + ", " +
                                      std::to_string(n) +
                                      (max_norm ? " elements, max-norm" : " elements");
            Encoding got = encode(f, x, key, isa);
            ASSERT_TRUE(got.norms.same(want.norms)) << where;
            ASSERT_TRUE(got.codes.same(want.codes)) << where;
            ASSERT_TRUE(got.norms.guard_intact() && got.codes.guard_intact()) << where;
            const Guarded out = decode(f, want, n, isa);
            ASSERT_TRUE(out.same(decoded)) << where;
            ASSERT_TRUE(out.guard_intact()) << where;
          }
        }
}

// Payloads no encoder writes (level 0 with the sign bit, negative, zero, NaN and infinite norms)
// decode to the same bits.
TEST(SimdKernels, QsgdDecodesAnyPayloadTheSameOnEveryIsa) {
  const auto isas = wide_isas();
  if (isas.empty()) GTEST_SKIP() << "no AVX2 kernels on this CPU";
  const float odd[] = {-3.0f,
                       0.0f,
                       -0.0f,
                       std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       1e-42f};
  for (int bits = 1; bits <= 8; ++bits)
    for (int64_t n : {9, 1000, 4103}) {
      const QsgdFormat f{bits, 16, false};
      at::Tensor bytes = at::randint(0, 256, {4 * f.buckets(n) + packed_bytes(n, bits + 1)},
                                     make_generator(bits, 6, n), at::kByte);
      Encoding e{Guarded(4 * f.buckets(n)), Guarded(packed_bytes(n, bits + 1))};
      std::memcpy(e.norms.data(), bytes.data_ptr<uint8_t>(), static_cast<size_t>(e.norms.size));
      std::memcpy(e.codes.data(), bytes.data_ptr<uint8_t>() + e.norms.size,
                  static_cast<size_t>(e.codes.size));
      float* norms = reinterpret_cast<float*>(e.norms.data());
      for (int64_t b = 0; b < f.buckets(n) && b < 6; ++b) norms[b] = odd[b];
      const Guarded want = decode(f, e, n, Isa::kBaseline);
      for (Isa isa : isas)
        ASSERT_TRUE(decode(f, e, n, isa).same(want)) << name(isa) << ", " << bits << " bits, " << n;
    }
}

// Outputs past simd.h's kStreamingBytes go out through non-temporal stores where aligned: the
// same values at every alignment.
TEST(SimdKernels, QsgdStreamedDecodingIsTheSameOnEveryIsaAndAlignment) {
  const auto isas = wide_isas();
  if (isas.empty()) GTEST_SKIP() << "no AVX2 kernels on this CPU";
  const int64_t n = kStreamingBytes / 4 + 4099;
  ASSERT_TRUE(stream_output(n));
  const QsgdFormat f{4, 512, false};
  Encoding e = encode(f, values(n, 8, true), 21, Isa::kBaseline);
  for (int64_t offset : {0, 4, 1}) {  // 32-, 16- and 4-byte aligned
    const Guarded want = decode(f, e, n, Isa::kBaseline, offset);
    for (Isa isa : isas) {
      const Guarded got = decode(f, e, n, isa, offset);
      ASSERT_TRUE(got.same(want) && got.guard_intact()) << name(isa) << ", offset " << offset;
    }
  }
}

TEST(SimdKernels, TernGradStatisticsAndCodesAreTheSameOnEveryIsa) {
  const auto isas = wide_isas();
  if (isas.empty()) GTEST_SKIP() << "no AVX2 kernels on this CPU";
  auto same = [](float a, float b) { return std::memcmp(&a, &b, 4) == 0; };
  for (int64_t n : {1, 7, 8, 31, 32, 33, 100, 4095, 4096, 4097, 4127, 9001, 40000})
    for (bool special : {false, true}) {
      const std::vector<float> x = values(n, 40 + n, special);
      for (double c : {0.0, 2.5}) {
        const TernaryStats want = ternary_stats(x.data(), n, c, Isa::kBaseline);
        // The scalers of the exchange, and ones that are subnormal, zero or infinite.
        const float scalers[] = {std::min(want.max_abs, want.clip), 1e-40f, 0.0f,
                                 std::numeric_limits<float>::infinity()};
        for (float s : scalers) {
          Guarded codes(packed_bytes(n, 2));
          at::Generator g = make_generator(3, 1, n);
          ternarize(x.data(), n, s, want.clip, g, codes.data(), Isa::kBaseline);
          for (Isa isa : isas) {
            const std::string where = name(isa) + ", " + std::to_string(n) + " elements, c " +
                                      std::to_string(c) + ", s " + std::to_string(s);
            const TernaryStats got = ternary_stats(x.data(), n, c, isa);
            ASSERT_TRUE(same(got.clip, want.clip) && same(got.max_abs, want.max_abs)) << where;
            Guarded mine(packed_bytes(n, 2));
            at::Generator h = make_generator(3, 1, n);
            ternarize(x.data(), n, s, want.clip, h, mine.data(), isa);
            ASSERT_TRUE(mine.same(codes) && mine.guard_intact()) << where;
          }
        }
      }
    }
}

}  // namespace
}  // namespace cedar
