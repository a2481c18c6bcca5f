#pragma once
// What the exchange targets (fuzz_qsgd, fuzz_sparse, fuzz_grace_codecs) build from the fuzz input:
// gradient buckets of fuzzed shapes, the bytes each fake peer sends, and byte tensors.
#include <ATen/ATen.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"

namespace cedar::fuzz {

// A bucket of 1 to 3 tensors of [min_size, max_size] elements each, laid out as the trainer lays
// it out (entry i, named "t<i>", is the i-th run of bucket.flat; its parameter is a copy). The
// flat values are values(total elements), called after the sizes are read, so it may read input.
template <class Values>
GradBucket consume_bucket(FuzzedDataProvider& in, int64_t min_size, int64_t max_size,
                          Values values) {
  const int tensors = in.ConsumeIntegralInRange<int>(1, 3);
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (int i = 0; i < tensors; ++i)
    total += sizes.emplace_back(in.ConsumeIntegralInRange<int64_t>(min_size, max_size));
  GradBucket bucket;
  bucket.flat = values(total);
  int64_t off = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    at::Tensor g = bucket.flat.narrow(0, off, sizes[i]);
    bucket.entries.push_back({"t" + std::to_string(i), g.clone(), g});
    off += sizes[i];
  }
  return bucket;
}

// What 1 to 3 peers send: up to max_bytes each.
inline std::vector<std::vector<uint8_t>> consume_peer_bytes(FuzzedDataProvider& in,
                                                            size_t max_bytes) {
  std::vector<std::vector<uint8_t>> sent;
  const int peers = in.ConsumeIntegralInRange<int>(1, 3);
  for (int p = 0; p < peers; ++p)
    sent.push_back(in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, max_bytes)));
  return sent;
}

// A 1-D uint8 tensor holding `bytes`.
inline at::Tensor bytes_tensor(const std::vector<uint8_t>& bytes) {
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  if (!bytes.empty()) std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t;
}

}  // namespace cedar::fuzz
