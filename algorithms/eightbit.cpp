// 8-bit quantization as in GRACE — Xu, Ho, Abdelmoniem, Dutta, Bergou, Karatsenidis, Canini,
// Kalnis, "GRACE: A Compressed Communication Framework for Distributed Machine Learning", ICDCS
// 2021 (its `u8bit` compressor), after Dettmers, "8-Bit Approximations for Parallelism in Deep
// Learning", ICLR 2016.
//
// What it is: not an IEEE-style 8-bit float (no per-value exponent field of fixed width) but a
// fixed table of 127 magnitudes in (0, 1), from Dettmers's dynamic data type (a decade chosen by
// leading zero bits, then a point in it), scaled per tensor by max |g|; each element sends its
// sign and the index of the largest table magnitude not above |g_i| / max |g|
// (codecs/eightbit_codec.h has the table's rule, the rounding and the special values).
// Rule, per gradient tensor on every worker: s = max_i |g_i|, Q(g)_i = sign(g_i)·m_j·s with j that
// index; every rank decodes every rank's Q and averages; the optimizer then applies its usual
// momentum SGD step. GRACE rounds toward zero (each magnitude is its bin's lower edge), so |Q(g)_i|
// <= |g_i|: a deterministic, biased quantizer; no error feedback, as GRACE's.
//
// Encoding of one tensor of n elements: [fp32 s][n bytes, index | sign << 7]: 4 + n bytes, one
// allgather per bucket: 4x less than fp32 for large tensors.
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

struct EightBitParams {
  template <class V>
  void visit(V&) {}
};

class EightBit final : public Algorithm {
 public:
  explicit EightBit(const EightBitParams&) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    // The quantizer draws nothing at random; the generator only satisfies the interface.
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, *compressor_, nullptr, gen);
  }

 private:
  std::unique_ptr<Compressor> compressor_ = make_eightbit_compressor();
};

}  // namespace

AlgorithmInfo eightbit_algorithm() {
  AlgorithmInfo info = algorithm_info<EightBit, EightBitParams>(
      "eightbit",
      "8-bit quantization (GRACE's u8bit): per tensor the max |g| as fp32, per element its sign "
      "and the index of one of 127 fixed magnitudes (Dettmers's dynamic data type) in one byte, "
      "allgather, decode and average",
      "Xu, Ho, Abdelmoniem, Dutta, Bergou, Karatsenidis, Canini, Kalnis. GRACE: A Compressed "
      "Communication Framework for Distributed Machine Learning. ICDCS 2021; the data type of "
      "Dettmers. 8-Bit "
      "Approximations for Parallelism in Deep Learning. ICLR 2016");
  info.device_independent = true;  // max, one division and one product per element: exact in fp32
  info.codec = "eightbit";
  info.not_lossless_because =
      "127 fixed magnitudes per sign, rounded toward zero: the fp32 mantissa is not sent";
  return info;
}

}  // namespace cedar
