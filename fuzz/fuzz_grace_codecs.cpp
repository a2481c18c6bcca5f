// The encodings of GRACE's quantizers from peers, through the real exchange: natural compression
// (9-bit codes), 1-bit SGD (two means and sign bits) and 8-bit quantization (a scale and one
// byte per value) reduce a bucket through exchange_compressed, with error feedback or without,
// over a FakePeers communicator whose other ranks send fuzz bytes. Also each decoder on its own,
// given fuzz bytes and a fuzzed element count.
// A hostile payload may give any gradient values, but never an out-of-bounds access, undefined
// behaviour, or an error other than the exchange's CommError / std::invalid_argument.
#include <ATen/ATen.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/error_feedback.h"
#include "fuzz/fake_peers.h"
#include "fuzz/fuzz_inputs.h"
#include "fuzz/torch_fuzz_main.h"

namespace {

std::unique_ptr<cedar::Compressor> consume_codec(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: return cedar::make_natural_compressor();
    case 1: return cedar::make_onebit_compressor();
    default: return cedar::make_eightbit_compressor();
  }
}

void exchange(FuzzedDataProvider& in) {
  auto codec = consume_codec(in);
  const bool feedback = in.ConsumeBool();
  // Values of any bits: the encoders' zeros, subnormals, infinities and NaNs included.
  cedar::GradBucket bucket = cedar::fuzz::consume_bucket(in, 0, 300, [&](int64_t total) {
    std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(static_cast<size_t>(4 * total));
    bytes.resize(static_cast<size_t>(4 * total), 0x3c);
    return cedar::fuzz::bytes_tensor(bytes).view(at::kFloat).clone();
  });
  const bool short_allgather = in.ConsumeBool();
  cedar::fuzz::FakePeers comm(cedar::fuzz::consume_peer_bytes(in, 2048), short_allgather);
  cedar::ErrorFeedback memory;
  at::Generator gen = cedar::make_generator(7, comm.rank(), 0, 0);
  try {
    cedar::exchange_compressed(bucket, comm, *codec, feedback ? &memory : nullptr, gen);
  } catch (const cedar::CommError&) {
    if (!short_allgather) std::abort();  // full-length payloads always decode
  }
}

void decode(FuzzedDataProvider& in) {
  auto codec = consume_codec(in);
  const int64_t n = in.ConsumeIntegralInRange<int64_t>(-2, 3000);
  const at::Tensor payload = cedar::fuzz::bytes_tensor(in.ConsumeRemainingBytes<uint8_t>());
  try {
    const at::Tensor out = codec->decompress(payload, n);
    if (out.numel() != n || codec->payload_bytes(n) != payload.numel()) std::abort();
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

void cedar::fuzz::fuzz_input(FuzzedDataProvider& in) {
  if (in.ConsumeBool())
    exchange(in);
  else
    decode(in);
}
