// QSGD encodings from peers, through the real exchange: QSGD's plugin (its parameters parsed
// from YAML like any experiment's) reduces a bucket over a FakePeers communicator whose other
// ranks send fuzz bytes. Also the b-bit unpacker on its own.
// A hostile payload may give any gradient values, but never an out-of-bounds access, undefined
// behaviour, or an error other than the exchange's CommError / std::invalid_argument.
#include <ATen/ATen.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/bit_packing.h"
#include "fuzz/fake_peers.h"
#include "fuzz/fuzz_inputs.h"
#include "fuzz/torch_fuzz_main.h"

namespace cedar {}

namespace {

void exchange(FuzzedDataProvider& in) {
  YAML::Node params(YAML::NodeType::Map);
  params["bits"] = in.ConsumeIntegralInRange<int>(1, 8);
  params["bucket_size"] = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(1, 700)
                                           : std::numeric_limits<int64_t>::max() -
                                                 in.ConsumeIntegralInRange<int64_t>(0, 3);
  params["norm"] = in.ConsumeBool() ? "max" : "l2";
  cedar::Source src{"fuzz", {}};
  auto algorithm = cedar::qsgd_algorithm().make(params, src, nullptr);

  cedar::GradBucket bucket = cedar::fuzz::consume_bucket(in, 0, 300, [&](int64_t total) {
    const float scale = in.ConsumeFloatingPointInRange<float>(-1e3f, 1e3f);
    return at::arange(total, at::kFloat).sin_().mul_(scale);
  });
  const bool short_allgather = in.ConsumeBool();
  cedar::fuzz::FakePeers comm(cedar::fuzz::consume_peer_bytes(in, 2048), short_allgather);
  cedar::StepContext ctx;
  ctx.seed = 7;
  try {
    algorithm->reduce_gradients(bucket, comm, ctx);
  } catch (const cedar::CommError&) {
    if (!short_allgather) std::abort();  // full-length payloads always decode
  }
}

void unpack(FuzzedDataProvider& in) {
  const int bits = in.ConsumeIntegralInRange<int>(0, 17);
  const int64_t n = in.ConsumeIntegralInRange<int64_t>(-2, 5000);
  at::Tensor t = cedar::fuzz::bytes_tensor(in.ConsumeRemainingBytes<uint8_t>());
  try {
    at::Tensor codes = cedar::unpack_bits(t, n, bits);
    if (codes.numel() != n) std::abort();
    if (n > 0 && codes.max().item<int64_t>() >= (int64_t{1} << bits)) std::abort();
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

void cedar::fuzz::fuzz_input(FuzzedDataProvider& in) {
  if (in.ConsumeBool())
    exchange(in);
  else
    unpack(in);
}
