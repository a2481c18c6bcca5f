// Sparse (index, value) encodings from peers: the compressor's decode (top-k / random-k through
// the exchange), DGC's path (allgather_sparse, then scatter_add_segments into a bucket's
// tensors), and the length-prefixed allgatherv exchange of data-dependent encodings, each over
// a FakePeers communicator whose other ranks send fuzz bytes.
// A hostile payload may give any gradient values, but never an out-of-bounds access, undefined
// behaviour, or an error other than CommError / std::invalid_argument.
#include <ATen/ATen.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "fuzz/fake_peers.h"
#include "fuzz/fuzz_inputs.h"
#include "fuzz/torch_fuzz_main.h"

namespace {

// Keeps the coordinates with |x| above the mean |x|; its encodings' sizes depend on the data,
// so the exchange sends them with its length header (allgatherv).
class AboveMean final : public cedar::SparseCompressor {
 public:
  at::Tensor select(const at::Tensor& x, at::Generator&) override {
    at::Tensor a = x.abs();
    return at::nonzero(a > a.mean()).reshape({-1});
  }
};

void decompress(FuzzedDataProvider& in) {
  const int64_t numel = in.ConsumeIntegralInRange<int64_t>(0, 2000);
  at::Tensor payload = cedar::fuzz::bytes_tensor(in.ConsumeRemainingBytes<uint8_t>());
  AboveMean c;
  at::Tensor out = c.decompress(payload, numel);
  if (out.numel() != numel) std::abort();
}

void dgc_path(FuzzedDataProvider& in) {
  std::vector<at::Tensor> segments;
  const int n = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < n; ++i)
    segments.push_back(at::zeros({in.ConsumeIntegralInRange<int64_t>(0, 300)}));
  const double scale = in.ConsumeBool() ? 1.0 : 0.25;
  at::Tensor mine = cedar::encode_sparse(at::arange(0, 3, at::kLong) * 2, at::ones({3}));
  cedar::fuzz::FakePeers comm(cedar::fuzz::consume_peer_bytes(in, 1024), false);
  for (const cedar::SparseView& s : cedar::allgather_sparse(mine, comm))
    cedar::scatter_add_segments(s, segments, scale);
}

void variable_exchange(FuzzedDataProvider& in) {
  cedar::GradBucket bucket = cedar::fuzz::consume_bucket(
      in, 1, 200, [](int64_t total) { return at::arange(total, at::kFloat).cos_(); });
  cedar::fuzz::FakePeers comm(cedar::fuzz::consume_peer_bytes(in, 1024), false);
  AboveMean c;
  at::Generator gen = cedar::make_generator(1, 0, 0);
  cedar::exchange_compressed(bucket, comm, c, nullptr, gen);
}

}  // namespace

void cedar::fuzz::fuzz_input(FuzzedDataProvider& in) {
  try {
    switch (in.ConsumeIntegralInRange<int>(0, 2)) {
      case 0: decompress(in); break;
      case 1: dgc_path(in); break;
      default: variable_exchange(in); break;
    }
  } catch (const cedar::CommError&) {
  } catch (const std::invalid_argument&) {
  }
}
