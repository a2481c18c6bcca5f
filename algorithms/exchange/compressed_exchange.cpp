#include "algorithms/exchange/compressed_exchange.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "comm/communicator.h"

namespace cedar {

namespace {

// last <- combine((sum + last) / n or sign(sum + last)) in one pass over fp32 storage: the same
// operations, in the same order and precision, as sum.add_(last) then sum.div_(n) or sum.sign_(),
// without the second pass over the sum.
void add_and_combine(at::Tensor& sum, const at::Tensor& last, int64_t ranks, Combine combine) {
  float* s = sum.data_ptr<float>();
  const float* d = last.data_ptr<float>();
  const int64_t n = sum.numel();
  if (combine == Combine::kAverage) {
    const float divisor = static_cast<float>(ranks);
    for (int64_t i = 0; i < n; ++i) s[i] = (s[i] + d[i]) / divisor;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float v = s[i] + d[i];
      s[i] = static_cast<float>((0.0f < v) - (v < 0.0f));
    }
  }
}

// The decodings of `payloads` (one per rank) summed in rank order and combined into `grad`,
// without a tensor per rank. Decoded on grad's device (generic_codecs.h off the CPU), with the
// same operations in the same order either way.
void decode_combine_into(Compressor& compressor, const std::vector<at::Tensor>& payloads,
                         Combine combine, at::Tensor& grad, float output) {
  const bool on_cpu = grad.device().is_cpu();
  const bool in_place = grad.scalar_type() == at::kFloat && grad.is_contiguous();
  at::Tensor sum =
      in_place ? grad.view({-1}) : at::empty({grad.numel()}, grad.options().dtype(at::kFloat));
  if (on_cpu && combine == Combine::kAverage && compressor.average_into(payloads, sum, output)) {
    if (!in_place) grad.copy_(sum.view(grad.sizes()));  // decoded, averaged and scaled in one pass
    return;
  }
  // The combination divided by `output` (if not 1), then stored into grad.
  const auto finish = [&] {
    if (output != 1.0f) sum.div_(output);
    if (!in_place) grad.copy_(sum.view(grad.sizes()));
  };
  if (on_cpu && combine == Combine::kMajority && compressor.majority_into(payloads, sum)) {
    finish();  // the codec counted the votes in one pass
    return;
  }
  compressor.decompress_into(payloads[0], sum);
  if (on_cpu && combine == Combine::kAverage) {
    // Each later decoding added into the sum by the codec (fp16 fuses decoding and adding), the
    // last addition with the division: (sum + d) / P.
    at::Tensor scratch;
    const auto ranks = static_cast<int64_t>(payloads.size());
    for (int64_t r = 1; r < ranks; ++r)
      compressor.add_decoded(payloads[r], sum, r + 1 == ranks ? static_cast<float>(ranks) : 1.0f,
                             scratch);
    finish();
    return;
  }
  at::Tensor decoded;
  for (size_t r = 1; r < payloads.size(); ++r) {
    if (!decoded.defined()) decoded = at::empty_like(sum);
    compressor.decompress_into(payloads[r], decoded);
    if (r + 1 == payloads.size() && on_cpu) {
      add_and_combine(sum, decoded, static_cast<int64_t>(payloads.size()), combine);
      break;
    }
    sum.add_(decoded);
  }
  if (!on_cpu && payloads.size() > 1) {  // the last addition and the combination, as above
    if (combine == Combine::kAverage) {
      sum.div_(static_cast<double>(payloads.size()));
    } else {
      sum.sign_();
    }
  }
  if (payloads.size() == 1 && combine == Combine::kMajority) sum.sign_();
  finish();
}

}  // namespace

ExchangeResult exchange_compressed(GradBucket& bucket, Communicator& comm, Compressor& compressor,
                                   ErrorFeedback* memory, at::Generator& gen, Combine combine,
                                   const std::vector<at::Tensor>& encode, ExchangeScaling scaling) {
  const size_t n_entries = bucket.entries.size();
  if (!encode.empty() && encode.size() != n_entries)
    throw std::invalid_argument("compressed exchange: " + std::to_string(encode.size()) +
                                " tensors to encode for a bucket of " + std::to_string(n_entries));
  bool fixed = true;
  for (const auto& e : bucket.entries)
    fixed = fixed && compressor.payload_bytes(e.grad.numel()) >= 0;

  std::vector<at::Tensor> parts;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < n_entries; ++i) {
    at::Tensor g = (encode.empty() ? bucket.entries[i].grad : encode[i]).reshape({-1});
    if (g.numel() != bucket.entries[i].grad.numel())
      throw std::invalid_argument("compressed exchange: a tensor of " + std::to_string(g.numel()) +
                                  " elements to encode for " + bucket.entries[i].name + " of " +
                                  std::to_string(bucket.entries[i].grad.numel()));
    const std::string& name = bucket.entries[i].name;
    if (!memory && scaling.input != 1.0f) g = g * scaling.input;
    at::Tensor payload = memory ? memory->compress(name, g, compressor, gen, scaling.input)
                                : compressor.compress(g, gen);
    lengths.push_back(payload.numel());
    parts.push_back(payload);
  }
  if (!fixed) {
    at::Tensor header = at::tensor(lengths, at::kLong);
    parts.insert(parts.begin(), as_bytes(header));
  }
  // Encodings are built where the gradients are (generic_codecs.h off the CPU) and travel on the
  // communicator's device (NCCL: the GPU); they are decoded where the gradients are.
  const at::Device home =
      bucket.entries.empty() ? at::Device(at::kCPU) : bucket.entries.front().grad.device();
  if (!fixed) parts.front() = parts.front().to(parts.size() > 1 ? parts[1].device() : home);
  at::Tensor mine = (parts.size() == 1 ? parts[0] : at::cat(parts)).to(comm.device());

  // Every rank's encoding of this bucket.
  std::vector<at::Tensor> per_rank;
  if (fixed) {
    at::Tensor all = comm.allgather(mine);
    if (all.numel() != comm.size() * mine.numel())
      throw CommError("compressed exchange: allgather returned " + std::to_string(all.numel()) +
                      " bytes, expected " + std::to_string(comm.size()) + " x " +
                      std::to_string(mine.numel()));
    all = all.to(home);
    for (int r = 0; r < comm.size(); ++r)
      per_rank.push_back(all.narrow(0, r * mine.numel(), mine.numel()));
  } else {
    for (const at::Tensor& buf : comm.allgatherv(mine)) per_rank.push_back(buf.to(home));
  }

  // Split every rank's buffer into per-tensor payloads.
  const int64_t header_bytes = fixed ? 0 : static_cast<int64_t>(8 * n_entries);
  std::vector<std::vector<at::Tensor>> payloads(n_entries);
  for (size_t r = 0; r < per_rank.size(); ++r) {
    const at::Tensor& buf = per_rank[r];
    std::vector<int64_t> len = lengths;
    if (!fixed) {
      // A peer's header is untrusted: every length must be non-negative and together with the
      // header they must cover the buffer exactly.
      if (buf.scalar_type() != at::kByte || buf.numel() < header_bytes)
        throw CommError("compressed exchange: rank " + std::to_string(r) + " sent " +
                        std::to_string(buf.numel()) + " bytes, less than its " +
                        std::to_string(header_bytes) + "-byte length header");
      at::Tensor h = from_bytes(buf.narrow(0, 0, header_bytes).cpu(), at::kLong);
      int64_t covered = header_bytes;
      for (size_t i = 0; i < n_entries; ++i) {
        len[i] = h[static_cast<int64_t>(i)].item<int64_t>();
        if (len[i] < 0 || len[i] > buf.numel() - covered)
          throw CommError("compressed exchange: rank " + std::to_string(r) + " announced " +
                          std::to_string(len[i]) + " bytes for tensor " + std::to_string(i) +
                          " but only " + std::to_string(buf.numel() - covered) + " remain");
        covered += len[i];
      }
      if (covered != buf.numel())
        throw CommError("compressed exchange: rank " + std::to_string(r) + " sent " +
                        std::to_string(buf.numel() - covered) + " bytes beyond its encodings");
    }
    int64_t off = header_bytes;
    for (size_t i = 0; i < n_entries; ++i) {
      payloads[i].push_back(buf.narrow(0, off, len[i]));
      off += len[i];
    }
  }
  // Decode and combine.
  for (size_t i = 0; i < n_entries; ++i)
    decode_combine_into(compressor, payloads[i], combine, bucket.entries[i].grad, scaling.output);
  return {mine.numel()};
}

}  // namespace cedar
