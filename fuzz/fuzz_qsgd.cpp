// QSGD encodings from peers, through the real exchange: the QSGD codec (any bits, bucket size and
// norm QSGD's parameters allow) reduces a bucket through exchange_compressed, as QSGD's plugin
// does, over a FakePeers communicator whose other ranks send fuzz bytes. Also the b-bit unpacker
// on its own.
// A hostile payload may give any gradient values, but never an out-of-bounds access, undefined
// behaviour, or an error other than the exchange's CommError / std::invalid_argument.
#include <ATen/ATen.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "fuzz/fake_peers.h"
#include "fuzz/fuzz_inputs.h"
#include "fuzz/torch_fuzz_main.h"

namespace cedar {}

namespace {

void exchange(FuzzedDataProvider& in) {
  const int bits = in.ConsumeIntegralInRange<int>(1, 8);
  const int64_t bucket_size = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(1, 700)
                                               : std::numeric_limits<int64_t>::max() -
                                                     in.ConsumeIntegralInRange<int64_t>(0, 3);
  const bool max_norm = in.ConsumeBool();
  auto codec = cedar::make_qsgd_compressor(bits, bucket_size, max_norm);

  cedar::GradBucket bucket = cedar::fuzz::consume_bucket(in, 0, 300, [&](int64_t total) {
    const float scale = in.ConsumeFloatingPointInRange<float>(-1e3f, 1e3f);
    return at::arange(total, at::kFloat).sin_().mul_(scale);
  });
  const bool short_allgather = in.ConsumeBool();
  cedar::fuzz::FakePeers comm(cedar::fuzz::consume_peer_bytes(in, 2048), short_allgather);
  at::Generator gen = cedar::make_generator(7, comm.rank(), 0, static_cast<uint64_t>(bucket.index));
  try {
    cedar::exchange_compressed(bucket, comm, *codec, nullptr, gen);
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
