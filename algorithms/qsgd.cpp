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
// Encoding of one tensor of n elements, B = bucket_size (codecs/qsgd_codec.h has the layout, the
// norms' summation order and the uniforms): ⌈n/B⌉ fp32 norms, then n codes of bits+1 bits,
// code = level | (negative << bits); size = 4·⌈n/B⌉ + ⌈n·(bits+1)/8⌉ bytes.
// Randomness: per bucket of the trainer, make_generator(seed, rank, step, stream = bucket.index);
// the codec draws one key per tensor from it, in bucket order — reproducible from (config, seed,
// world size).
#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "comm/communicator.h"

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

class Qsgd final : public Algorithm {
 public:
  explicit Qsgd(const QsgdParams& p)
      : compressor_(make_qsgd_compressor(p.bits, p.bucket_size, p.norm == "max")) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, *compressor_, nullptr, gen);
  }

 private:
  std::unique_ptr<Compressor> compressor_;
};

}  // namespace

AlgorithmInfo qsgd_algorithm() {
  AlgorithmInfo info = algorithm_info<Qsgd, QsgdParams>(
      "qsgd",
      "QSGD: stochastic quantization to s = 2^bits - 1 levels of each bucket's norm, "
      "sign + level packed (bits + 1 bits per element), allgather, decode and average",
      "Alistarh, Grubic, Li, Tomioka, Vojnovic. QSGD: Communication-Efficient SGD via Gradient "
      "Quantization and Encoding. NeurIPS 2017");
  info.device_independent = true;  // the counter-based uniforms are the same everywhere
  info.codec = "qsgd";
  info.not_lossless_because =
      "stochastic rounding is unbiased, not exact, at any finite number of levels";
  return info;
}

}  // namespace cedar
