#include "algorithms/exchange/script_exchange.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/params.h"

namespace cedar {
namespace {

// sum <- (sum + d) / divisor, both contiguous fp32 of one size: the scalar loop of the built-in
// codecs' averaging (Compressor::add_decoded) on the CPU, the same operations elsewhere.
void add_and_divide(at::Tensor& sum, const at::Tensor& d, float divisor) {
  if (!sum.is_cpu()) {
    sum.add_(d);
    if (divisor != 1.0f) sum.div_(static_cast<double>(divisor));
    return;
  }
  float* s = sum.data_ptr<float>();
  const float* x = d.data_ptr<float>();
  const int64_t n = sum.numel();
  if (divisor == 1.0f) {
    for (int64_t i = 0; i < n; ++i) s[i] += x[i];
  } else {
    for (int64_t i = 0; i < n; ++i) s[i] = (s[i] + x[i]) / divisor;
  }
}

// Every rank's payloads in one allgather, each gradient's decodings averaged into its grad.
void gather_and_average(GradBucket& bucket, Communicator& comm, ScriptCompressor& codec,
                        const std::vector<at::Tensor>& payloads, const at::Device home) {
  at::Tensor mine = at::cat(payloads).to(comm.device());
  at::Tensor all = comm.allgather(mine);
  const int ranks = comm.size();
  if (all.numel() != ranks * mine.numel())
    throw CommError("script exchange: allgather returned " + std::to_string(all.numel()) +
                    " bytes, expected " + std::to_string(ranks) + " x " +
                    std::to_string(mine.numel()));
  all = all.to(home);
  int64_t offset = 0;
  for (size_t i = 0; i < bucket.entries.size(); ++i) {
    GradEntry& e = bucket.entries[i];
    const int64_t numel = e.grad.numel(), len = payloads[i].numel();
    codec.set_name(e.name);
    at::Tensor sum = codec.decompress(all.narrow(0, offset, len), numel).to(home).contiguous();
    for (int r = 1; r < ranks; ++r) {
      const at::Tensor d =
          codec.decompress(all.narrow(0, r * mine.numel() + offset, len), numel).to(home);
      add_and_divide(sum, d, r + 1 == ranks ? static_cast<float>(ranks) : 1.0f);
    }
    e.grad.copy_(sum.view(e.grad.sizes()));
    offset += len;
  }
}

// The bucket's encoded tensors summed over the ranks, one allreduce per dtype; each gradient's
// sums decoded and divided by the rank count into its grad.
void sum_and_decode(GradBucket& bucket, Communicator& comm, ScriptCompressor& codec,
                    const std::vector<at::Tensor>& payloads, const at::Device home) {
  const size_t n = bucket.entries.size();
  std::vector<std::vector<at::Tensor>> parts(n);
  std::vector<at::ScalarType> dtypes;  // in order of first appearance
  for (size_t i = 0; i < n; ++i) {
    parts[i] = codec.parts(payloads[i], bucket.entries[i].grad.numel());
    for (const at::Tensor& p : parts[i]) {
      const at::ScalarType t = p.scalar_type();
      if (t != at::kFloat && t != at::kDouble && t != at::kChar && t != at::kByte &&
          t != at::kInt && t != at::kLong)
        throw ConfigError("script " + codec.module().path() + ": compress returned a " +
                          c10::toString(t) + " tensor for " + bucket.entries[i].name +
                          ", but an allreduce sums only fp32, fp64, int8, uint8, int32 and int64 "
                          "tensors");
      if (std::find(dtypes.begin(), dtypes.end(), t) == dtypes.end()) dtypes.push_back(t);
    }
  }
  for (const at::ScalarType t : dtypes) {
    std::vector<at::Tensor> flat;
    for (const auto& entry_parts : parts)
      for (const at::Tensor& p : entry_parts)
        if (p.scalar_type() == t) flat.push_back(p.reshape({-1}));
    at::Tensor sum = at::cat(flat).to(comm.device());
    comm.allreduce_sum(sum);
    sum = sum.to(home);
    int64_t off = 0;
    for (auto& entry_parts : parts)
      for (at::Tensor& p : entry_parts)
        if (p.scalar_type() == t) {
          p = sum.narrow(0, off, p.numel()).view(p.sizes());
          off += p.numel();
        }
  }
  const float ranks = static_cast<float>(comm.size());
  for (size_t i = 0; i < n; ++i) {
    GradEntry& e = bucket.entries[i];
    codec.set_name(e.name);
    at::Tensor decoded = codec.decode(parts[i], e.grad.numel()).to(home);
    if (ranks != 1.0f) decoded = decoded / ranks;
    e.grad.copy_(decoded.view(e.grad.sizes()));
  }
}

}  // namespace

ExchangeResult exchange_scripted(GradBucket& bucket, Communicator& comm, ScriptCompressor& codec,
                                 ErrorFeedback* memory, at::Generator& gen) {
  if (bucket.entries.empty()) return {};
  std::vector<at::Tensor> payloads;
  int64_t bytes = 0;
  for (GradEntry& e : bucket.entries) {
    const at::Tensor g = e.grad.reshape({-1});
    codec.set_name(e.name);
    payloads.push_back(memory ? memory->compress(e.name, g, codec, gen) : codec.compress(g, gen));
    bytes += payloads.back().numel();
  }
  const at::Device home = bucket.entries.front().grad.device();
  if (codec.module().exchange() == ScriptExchange::kAllreduce) {
    sum_and_decode(bucket, comm, codec, payloads, home);
  } else {
    gather_and_average(bucket, comm, codec, payloads, home);
  }
  return {bytes};
}

}  // namespace cedar
