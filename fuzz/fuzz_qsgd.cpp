// QSGD encodings from peers, through the real exchange: QSGD's plugin (its parameters parsed
// from YAML like any experiment's) reduces a bucket over a FakePeers communicator whose other
// ranks send fuzz bytes. Also the b-bit unpacker on its own.
// A hostile payload may give any gradient values, but never an out-of-bounds access, undefined
// behaviour, or an error other than the exchange's CommError / std::invalid_argument.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/bit_packing.h"
#include "fuzz/fake_peers.h"

namespace cedar {
AlgorithmInfo qsgd_algorithm();
}

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

  const int tensors = in.ConsumeIntegralInRange<int>(1, 3);
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (int i = 0; i < tensors; ++i) total += sizes.emplace_back(in.ConsumeIntegralInRange<int64_t>(0, 300));
  const float scale = in.ConsumeFloatingPointInRange<float>(-1e3f, 1e3f);
  cedar::GradBucket bucket;
  bucket.flat = at::arange(total, at::kFloat).sin_().mul_(scale);
  int64_t off = 0;
  for (int i = 0; i < tensors; ++i) {
    at::Tensor g = bucket.flat.narrow(0, off, sizes[static_cast<size_t>(i)]);
    bucket.entries.push_back({"t" + std::to_string(i), g.clone(), g});
    off += sizes[static_cast<size_t>(i)];
  }
  const bool short_allgather = in.ConsumeBool();
  const int peers = in.ConsumeIntegralInRange<int>(1, 3);
  std::vector<std::vector<uint8_t>> sent;
  for (int p = 0; p < peers; ++p)
    sent.push_back(in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, 2048)));
  cedar::fuzz::FakePeers comm(std::move(sent), short_allgather);
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
  std::vector<uint8_t> bytes = in.ConsumeRemainingBytes<uint8_t>();
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  if (!bytes.empty()) std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  try {
    at::Tensor codes = cedar::unpack_bits(t, n, bits);
    if (codes.numel() != n) std::abort();
    if (n > 0 && codes.max().item<int64_t>() >= (int64_t{1} << bits)) std::abort();
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) exchange(in);
  else unpack(in);
  return 0;
}
