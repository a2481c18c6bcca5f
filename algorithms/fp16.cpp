// fp16 gradient compression: every gradient is cast to IEEE half precision (binary16) for the
// exchange, as PyTorch DDP's fp16_compress_hook does; the format is the one of Micikevicius et al.,
// "Mixed Precision Training", ICLR 2018.
//
// Rule: send half(g) (2 bytes per element instead of 4), every rank decodes the workers' halves
// to fp32 and averages them in fp32; the optimizer then applies its usual (momentum) SGD step.
// Values beyond ±65504 become ±inf and those below 2^-24 in magnitude flush to zero, as in the
// hook (no loss scaling here).
//
// Encoding of one tensor of n elements: its n halves in host byte order, 2n bytes
// (codecs/fp16_codec.cpp).
// Exchange: one allgather per bucket of the halves (2n bytes per rank), so the payload is exactly
// 2 bytes per element on every backend; PyTorch's hook instead allreduces the halves (same payload,
// a ring allreduce moves 2(P−1)/P·2n bytes per link where this allgather moves (P−1)·2n), and sums
// in fp16, which this exchange avoids by averaging in fp32. The MPI backend has no half allreduce.
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

struct Fp16Params {
  template <class V>
  void visit(V&) {}
};

class Fp16 final : public Algorithm {
 public:
  explicit Fp16(const Fp16Params&) {}
  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, *compressor_, nullptr, gen);
  }

 private:
  std::unique_ptr<Compressor> compressor_ = make_fp16_compressor();
};

}  // namespace

AlgorithmInfo fp16_algorithm() {
  AlgorithmInfo info = algorithm_info<Fp16, Fp16Params>(
      "fp16",
      "fp16 compression: gradients cast to half precision (2 bytes per element), "
      "allgather, decode and average in fp32",
      "PyTorch DDP fp16_compress_hook; half precision as in Micikevicius et al. Mixed Precision "
      "Training. ICLR 2018");
  info.device_independent = true;
  info.codec = "fp16";
  info.elementwise_exchange = true;  // each element rounded, gathered and averaged alone
  info.not_lossless_because = "rounding to half precision loses bits by design";
  return info;
}

}  // namespace cedar
