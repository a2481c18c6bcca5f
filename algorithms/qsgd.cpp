// QSGD — Alistarh, Grubic, Li, Tomioka, Vojnovic, "QSGD: Communication-Efficient SGD via Gradient
// Quantization and Encoding", NeurIPS 2017.
//
// Rule (per bucket v of `bucket_size` consecutive elements of one gradient tensor, s levels):
//   Q_s(v)_i = ‖v‖ · sgn(v_i) · ξ_i,  l = ⌊s·|v_i|/‖v‖⌋,
//   ξ_i = (l+1)/s with probability s·|v_i|/‖v‖ − l, else l/s.
// Unbiased, E[Q_s(v)] = v, with E‖Q_s(v) − v‖² ≤ min(n/s², √n/s)·‖v‖² (n = bucket size, L2 norm).
// Exchange: every rank encodes each gradient of the bucket, one allgather carries all encodings
// (quantized values cannot be summed in place without overflow), every rank decodes every rank's
// encoding and averages; the optimizer then applies its usual momentum SGD step.
//
// Hyper-parameters:
//   bits        (default 4)   s = 2^bits − 1 levels; an element costs bits + 1 bits (level + sign).
//                             4 and 8 bits are the settings the paper reports at full accuracy; 4
//                             is the default as the one of the two that compresses most (5 bits
//                             per element + 4 bytes per 512, 6.3x less than fp32; 8 bits: 3.5x).
//   bucket_size (default 512) elements that share one norm (one fp32 on the wire).
//   norm        (default l2)  l2: the paper's analysis (variance bound above); max: ‖v‖∞, still
//                             unbiased, with finer effective levels.
//
// Encoding of one tensor of n elements, B = bucket_size, m = ⌈n/B⌉ buckets:
//   bytes [0, 4m)   m fp32 norms (host byte order, little-endian on every supported platform);
//   then            n codes of bits+1 bits packed by bit_packing.h (LSB-first stream),
//                   code = level | (negative << bits), level in [0, s]; negative is set only when
//                   level > 0 (a zero has no sign).
//   size = 4·⌈n/B⌉ + ⌈n·(bits+1)/8⌉ bytes.
// Norms: max by |v_i|; l2 as the square root of Σ v_i² in fp64, accumulated in eight partial
// sums (element i of the bucket into sum i mod 8), added as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)),
// then rounded to fp32.
// Randomness: per bucket of the trainer, make_generator(seed, rank, step, stream = bucket.index);
// per tensor, in bucket order, key = draw_key(gen) and u_i = CounterUniforms(key) at element i
// (counter_rng.h), level = l + (u_i < a_i − l) with a_i = |v_i|·(s/‖v‖) in fp32 — reproducible
// from (config, seed, world size).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "algorithms/algorithm.h"
#include "algorithms/bit_packing.h"
#include "algorithms/compressed_exchange.h"
#include "algorithms/counter_rng.h"
#include "runner/comm/communicator.h"

namespace cedar {
namespace {

struct QsgdParams {
  int bits = 4;
  int64_t bucket_size = 512;
  std::string norm = "l2";

  template <class V>
  void visit(V& v) {
    v("bits", bits,
      "bits per quantization level: s = 2^bits - 1 levels; each element costs bits + 1 bits "
      "(level and sign)",
      in_range(1, 8));
    v("bucket_size", bucket_size, "consecutive elements of a gradient that share one norm",
      at_least(1));
    v("norm", norm, "bucket norm the levels are relative to: l2 (the paper's analysis) or max",
      one_of({"l2", "max"}));
  }
};

class QsgdCompressor final : public Compressor {
 public:
  QsgdCompressor(int bits, int64_t bucket, bool max_norm)
      : bits_(bits), levels_((1u << bits) - 1), bucket_(bucket), max_norm_(max_norm) {}

  int64_t payload_bytes(int64_t numel) const override {
    return 4 * buckets(numel) + packed_bytes(numel, bits_ + 1);
  }

  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override {
    at::Tensor v = x.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
    const int64_t n = v.numel();
    const int64_t m = buckets(n);
    at::Tensor out = at::empty({payload_bytes(n)}, at::kByte);
    uint8_t* op = out.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    const CounterUniforms rng(draw_key(gen));
    const float* vp = v.data_ptr<float>();
    uint8_t* codes = op + 4 * m;
    switch (bits_ + 1) {
      case 2: encode<2>(vp, n, rng, norms.data(), codes); break;
      case 3: encode<3>(vp, n, rng, norms.data(), codes); break;
      case 4: encode<4>(vp, n, rng, norms.data(), codes); break;
      case 5: encode<5>(vp, n, rng, norms.data(), codes); break;
      case 6: encode<6>(vp, n, rng, norms.data(), codes); break;
      case 7: encode<7>(vp, n, rng, norms.data(), codes); break;
      case 8: encode<8>(vp, n, rng, norms.data(), codes); break;
      default: encode<9>(vp, n, rng, norms.data(), codes); break;
    }
    if (m) std::memcpy(op, norms.data(), 4 * static_cast<size_t>(m));
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    at::Tensor out = at::empty({numel}, at::kFloat);
    decompress_into(payload, out);
    return out;
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "qsgd");
    const int64_t numel = out.numel();
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("qsgd: a payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " elements (expected " +
                                  std::to_string(payload_bytes(numel)) + ")");
    const int64_t m = buckets(numel);
    at::Tensor in = payload.contiguous();
    const uint8_t* ip = in.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    if (m) std::memcpy(norms.data(), ip, 4 * static_cast<size_t>(m));
    float* o = out.data_ptr<float>();
    switch (bits_ + 1) {
      case 2: decode<2>(ip + 4 * m, numel, norms.data(), o); break;
      case 3: decode<3>(ip + 4 * m, numel, norms.data(), o); break;
      case 4: decode<4>(ip + 4 * m, numel, norms.data(), o); break;
      case 5: decode<5>(ip + 4 * m, numel, norms.data(), o); break;
      case 6: decode<6>(ip + 4 * m, numel, norms.data(), o); break;
      case 7: decode<7>(ip + 4 * m, numel, norms.data(), o); break;
      case 8: decode<8>(ip + 4 * m, numel, norms.data(), o); break;
      default: decode<9>(ip + 4 * m, numel, norms.data(), o); break;
    }
  }

 private:
  // Elements per step of the encoder and decoder: their uniforms and codes stay in the L1/L2
  // caches between the passes over them. A multiple of 8, so every chunk starts on a byte.
  static constexpr int64_t kChunk = 4096;

  // ⌈n/B⌉ without forming n + B - 1, which overflows for a bucket_size near 2^63.
  int64_t buckets(int64_t n) const { return n > 0 ? (n - 1) / bucket_ + 1 : 0; }

  float bucket_norm(const float* x, int64_t n) const {
    if (max_norm_) {
      // Eight running maxima (the maximum does not depend on the order; NaNs are skipped).
      float mx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) mx[j] = std::max(mx[j], std::fabs(x[i + j]));
      for (; i < n; ++i) mx[0] = std::max(mx[0], std::fabs(x[i]));
      float r = 0;
      for (float v : mx) r = std::max(r, v);
      return r;
    }
    return static_cast<float>(std::sqrt(sum_of_squares(x, n)));
  }

  // Σ x_i² in fp64 in the documented order: eight partial sums (element i into sum i mod 8),
  // added pairwise. The eight chains of additions overlap and vectorize.
  static double sum_of_squares(const float* x, int64_t n) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
#if defined(__SSE2__)
    // The loop below with the eight sums in registers: lanes (0,1) (2,3) (4,5) (6,7).
    if (n >= 8) {
      __m128d q[4] = {_mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd()};
      for (; i + 8 <= n; i += 8) {
        const __m128 x0 = _mm_loadu_ps(x + i), x1 = _mm_loadu_ps(x + i + 4);
        const __m128d d[4] = {_mm_cvtps_pd(x0), _mm_cvtps_pd(_mm_movehl_ps(x0, x0)),
                              _mm_cvtps_pd(x1), _mm_cvtps_pd(_mm_movehl_ps(x1, x1))};
        for (int j = 0; j < 4; ++j) q[j] = _mm_add_pd(q[j], _mm_mul_pd(d[j], d[j]));
      }
      for (int j = 0; j < 4; ++j) _mm_storeu_pd(s + 2 * j, q[j]);
    }
#endif
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) {
        const double e = x[i + j];
        s[j] += e * e;
      }
    for (int j = 0; i < n; ++i, ++j) {
      const double e = x[i];
      s[j] += e * e;
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  }

  // Norms of buckets [first, last).
  void bucket_norms(const float* x, int64_t n, int64_t first, int64_t last, float* norms) const {
    for (int64_t b = first; b < last; ++b) {
      const int64_t lo = b * bucket_;
      norms[b] = bucket_norm(x + lo, std::min(bucket_, n - lo));
    }
  }

  // Codes (level | negative << bits) of x[0, n) at one bucket's scale; u: the uniforms.
  static void quantize(const float* x, const float* u, int64_t n, float scale, float s,
                       uint32_t sign_bit, uint32_t* code) {
    for (int64_t i = 0; i < n; ++i) {
      float a = std::fabs(x[i]) * scale;
      a = a <= s ? a : s;  // rounding of the norm (and NaN) must not overflow the code
      const int32_t whole = static_cast<int32_t>(a);  // floor: 0 <= a <= s
      const uint32_t level =
          static_cast<uint32_t>(whole) + (u[i] < a - static_cast<float>(whole) ? 1u : 0u);
      code[i] = level | ((level != 0u) & (x[i] < 0) ? sign_bit : 0u);
    }
  }

  // Eight B-bit codes fill B bytes: one 64-bit word (B <= 8) or two (B = 9), little-endian.
  template <int B>
  static void pack(const uint32_t* code, int64_t n, uint8_t* out) {
    int64_t g = 0;
    for (; g + 8 <= n; g += 8, out += B) {
      uint64_t lo = 0;
      for (int k = 0; k < 8 && k * B < 64; ++k) lo |= static_cast<uint64_t>(code[g + k]) << (k * B);
      if constexpr (B <= 8) {
        std::memcpy(out, &lo, B);
      } else {
        std::memcpy(out, &lo, 8);
        out[8] = static_cast<uint8_t>(code[g + 7] >> (64 - 7 * B));
      }
    }
    if (g < n) {
      BitWriter w(out, B);
      for (; g < n; ++g) w.put(code[g]);
      w.finish();
    }
  }

  // `end`: the end of the packed stream (8-byte loads never read past it).
  template <int B>
  static void unpack(const uint8_t* in, const uint8_t* end, int64_t n, uint32_t* code) {
    constexpr uint32_t mask = (1u << B) - 1;
    int64_t g = 0;
    for (; g + 8 <= n; g += 8, in += B) {
      // One 8-byte load (bits above 8·B are not used); near the end, byte by byte.
      uint64_t lo = 0;
      if (end - in >= 8) {
        std::memcpy(&lo, in, 8);
      } else {
        for (int k = 0; k < B && k < 8; ++k) lo |= static_cast<uint64_t>(in[k]) << (8 * k);
      }
      for (int k = 0; k < 8 && k * B < 64; ++k)
        code[g + k] = static_cast<uint32_t>(lo >> (k * B)) & mask;
      if constexpr (B > 8)
        code[g + 7] = (code[g + 7] | static_cast<uint32_t>(in[8]) << (64 - 7 * B)) & mask;
    }
    if (g < n) {
      BitReader r(in, B);
      for (; g < n; ++g) code[g] = r.get();
    }
  }

  template <int B>
  void encode(const float* x, int64_t n, const CounterUniforms& rng, float* norms,
              uint8_t* codes) const {
    float u[kChunk];
    uint32_t code[kChunk];
    const float s = static_cast<float>(levels_);
    const uint32_t sign_bit = 1u << bits_;
    int64_t normed = 0;  // buckets whose norm is known
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t len = std::min(kChunk, n - c0), c1 = c0 + len;
      const int64_t needed = (c1 - 1) / bucket_ + 1;
      if (needed > normed) bucket_norms(x, n, normed, needed, norms);
      normed = std::max(normed, needed);
      rng.fill(static_cast<uint64_t>(c0), len, u);
      for (int64_t lo = c0; lo < c1;) {
        const int64_t b = lo / bucket_;
        const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
        const float norm = norms[b];
        quantize(x + lo, u + (lo - c0), hi - lo, norm > 0 ? s / norm : 0.0f, s, sign_bit,
                 code + (lo - c0));
        lo = hi;
      }
      pack<B>(code, len, codes + c0 / 8 * B);
    }
  }

  // Values into out[0, n): chunk by chunk through an L1 buffer, streamed out when large.
  template <int B>
  void decode(const uint8_t* codes, int64_t n, const float* norms, float* out) const {
    uint32_t code[kChunk];
    float value[kChunk];
    const uint8_t* end = codes + packed_bytes(n, B);
    const bool stream = stream_output(n);
    constexpr int bits = B - 1;  // B = bits_ + 1: constants the loop below vectorizes with
    constexpr uint32_t levels = (1u << bits) - 1;
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t len = std::min(kChunk, n - c0), c1 = c0 + len;
      unpack<B>(codes + c0 / 8 * B, end, len, code);
      for (int64_t lo = c0; lo < c1;) {
        const int64_t b = lo / bucket_;
        const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
        const float unit = norms[b] / static_cast<float>(levels);
        const uint32_t* c = code + (lo - c0);
        float* v = (stream ? value : out + c0) + (lo - c0);
        for (int64_t i = 0; i < hi - lo; ++i) {
          // level · unit with the sign bit of the code moved to the float's sign bit.
          const float mag = static_cast<float>(static_cast<int32_t>(c[i] & levels)) * unit;
          uint32_t word;
          std::memcpy(&word, &mag, 4);
          word ^= (c[i] >> bits) << 31;
          std::memcpy(v + i, &word, 4);
        }
        lo = hi;
      }
      if (stream) store_floats(out + c0, value, len, true);
    }
    if (stream) store_fence();
  }

  int bits_;
  uint32_t levels_;
  int64_t bucket_;
  bool max_norm_;
};

class Qsgd final : public Algorithm {
 public:
  explicit Qsgd(const QsgdParams& p) : compressor_(p.bits, p.bucket_size, p.norm == "max") {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step,
                                       static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, compressor_, nullptr, gen);
  }

 private:
  QsgdCompressor compressor_;
};

}  // namespace

AlgorithmInfo qsgd_algorithm() {
  return algorithm_info<Qsgd, QsgdParams>(
      "qsgd",
      "QSGD: stochastic quantization to s = 2^bits - 1 levels of each bucket's norm, "
      "sign + level packed (bits + 1 bits per element), allgather, decode and average",
      "Alistarh, Grubic, Li, Tomioka, Vojnovic. QSGD: Communication-Efficient SGD via Gradient "
      "Quantization and Encoding. NeurIPS 2017");
}

// The QSGD codec alone (bench/compressors_bench.cpp times it against a memory pass).
std::unique_ptr<Compressor> make_qsgd_compressor(int bits, int64_t bucket_size, bool max_norm) {
  return std::make_unique<QsgdCompressor>(bits, bucket_size, max_norm);
}

}  // namespace cedar
