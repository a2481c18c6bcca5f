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
// Randomness: per bucket of the trainer, make_generator(seed, rank, step, stream = bucket.index);
// per tensor, in bucket order, u = at::rand({numel}, gen) and level = l + (u_i < a_i − l) with
// a_i = |v_i|·(s/‖v‖) in fp32 — reproducible from (config, seed, world size).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/bit_packing.h"
#include "algorithms/compressed_exchange.h"
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
    at::Tensor u = at::rand({n}, gen, at::TensorOptions().dtype(at::kFloat));
    at::Tensor out = at::empty({payload_bytes(n)}, at::kByte);
    const float* xp = v.data_ptr<float>();
    const float* up = u.data_ptr<float>();
    uint8_t* op = out.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    BitWriter w(op + 4 * m, bits_ + 1);
    const float s = static_cast<float>(levels_);
    const uint32_t sign_bit = 1u << bits_;
    for (int64_t b = 0; b < m; ++b) {
      const int64_t lo = b * bucket_, hi = std::min(n, lo + bucket_);
      const float norm = bucket_norm(xp + lo, hi - lo);
      norms[static_cast<size_t>(b)] = norm;
      const float scale = norm > 0 ? s / norm : 0.0f;
      for (int64_t i = lo; i < hi; ++i) {
        float a = std::fabs(xp[i]) * scale;
        if (!(a <= s)) a = s;  // rounding of the norm (and NaN) must not overflow the code
        const float l = std::floor(a);
        const uint32_t level = static_cast<uint32_t>(l) + (up[i] < a - l ? 1u : 0u);
        w.put(level | (level && xp[i] < 0 ? sign_bit : 0u));
      }
    }
    w.finish();
    if (m) std::memcpy(op, norms.data(), 4 * static_cast<size_t>(m));
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("qsgd: a payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " elements (expected " +
                                  std::to_string(payload_bytes(numel)) + ")");
    const int64_t m = buckets(numel);
    at::Tensor in = payload.contiguous();
    const uint8_t* ip = in.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    if (m) std::memcpy(norms.data(), ip, 4 * static_cast<size_t>(m));
    at::Tensor out = at::empty({numel}, at::kFloat);
    float* o = out.data_ptr<float>();
    BitReader r(ip + 4 * m, bits_ + 1);
    const uint32_t sign_bit = 1u << bits_;
    for (int64_t b = 0; b < m; ++b) {
      const int64_t lo = b * bucket_, hi = std::min(numel, lo + bucket_);
      const float unit = norms[static_cast<size_t>(b)] / static_cast<float>(levels_);
      for (int64_t i = lo; i < hi; ++i) {
        const uint32_t code = r.get();
        const float value = static_cast<float>(code & levels_) * unit;
        o[i] = (code & sign_bit) ? -value : value;
      }
    }
    return out;
  }

 private:
  int64_t buckets(int64_t n) const { return (n + bucket_ - 1) / bucket_; }

  float bucket_norm(const float* x, int64_t n) const {
    if (max_norm_) {
      float mx = 0;
      for (int64_t i = 0; i < n; ++i) mx = std::max(mx, std::fabs(x[i]));
      return mx;
    }
    double sq = 0;
    for (int64_t i = 0; i < n; ++i) sq += static_cast<double>(x[i]) * x[i];
    return static_cast<float>(std::sqrt(sq));
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

}  // namespace cedar
