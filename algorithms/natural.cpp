// Natural compression — Horváth, Ho, Horváth, Sahu, Canini, Richtárik, "Natural Compression for
// Distributed Deep Learning", arXiv:1905.10988, 2019 (C_nat; GRACE's `natural` compressor).
//
// Rule, every element of every gradient tensor on every worker: C_nat(x) is one of the two powers
// of two around x, the upper one 2a with probability (|x| − a)/a (a = 2^⌊log2 |x|⌋), else a, with
// x's sign. Unbiased, E[C_nat(x)] = x, with variance at most x²/8 (the paper's ω = 1/8): what
// is sent is x's sign and exponent, the 23 mantissa bits replaced by one random bit of rounding.
// Exchange: every rank encodes each gradient of the bucket, one allgather carries all encodings,
// every rank decodes every rank's encoding and averages; the optimizer then applies its usual
// momentum SGD step. No error feedback: the compressor is unbiased (the paper's setting).
//
// Encoding of one tensor of n elements (codecs/natural_codec.h has the bit rule with its zeros,
// subnormals and non-finite values): n codes of 9 bits, code = exponent field | sign << 8, packed
// LSB first: ⌈9n/8⌉ bytes, 3.56x less than fp32. GRACE sends 8 bits per element (sign and 7 bits
// of an exponent clipped to [2^−110, 2^17]); this is the paper's 9-bit format, whose 8-bit exponent
// covers every fp32 binade and needs no clipping.
// Randomness: per bucket, make_generator(seed, rank, step, stream = bucket.index); the codec draws
// one key per tensor from it, in bucket order — reproducible from (config, seed, world size).
//
// Hyper-parameters: none.
#include <ATen/ATen.h>

#include <memory>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct NaturalParams {
  template <class V>
  void visit(V&) {}
};

class Natural final : public Algorithm {
 public:
  explicit Natural(const NaturalParams&) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, *compressor_, nullptr, gen);
  }

 private:
  std::unique_ptr<Compressor> compressor_ = make_natural_compressor();
};

}  // namespace

AlgorithmInfo natural_algorithm() {
  AlgorithmInfo info = algorithm_info<Natural, NaturalParams>(
      "natural",
      "natural compression: each element rounded stochastically to one of the two powers of two "
      "around it (unbiased), sign + 8-bit exponent = 9 bits per element, allgather, decode and "
      "average",
      "Horváth, Ho, Horváth, Sahu, Canini, Richtárik. Natural Compression for Distributed Deep "
      "Learning. arXiv:1905.10988, 2019");
  info.device_independent = true;  // the counter-based words are the same everywhere
  info.codec = "natural";
  info.not_lossless_because =
      "stochastic rounding to a power of two is unbiased, not exact: the mantissa is not sent";
  return info;
}

}  // namespace cedar
