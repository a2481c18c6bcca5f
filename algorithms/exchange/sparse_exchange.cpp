#include "algorithms/exchange/sparse_exchange.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "algorithms/algorithm_state.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/exchange/sparse_scatter.h"
#include "comm/communicator.h"

namespace cedar {

int64_t keep_count(int64_t numel, double fraction) {
  if (numel <= 0) return 0;
  double k = std::ceil(static_cast<double>(numel) * fraction - 1e-9);
  if (k < 1) return 1;
  if (k >= static_cast<double>(numel)) return numel;
  return static_cast<int64_t>(k);
}

at::Tensor encode_sparse(const at::Tensor& indices, const at::Tensor& values) {
  if (indices.numel() != values.numel())
    throw std::invalid_argument("encode_sparse: " + std::to_string(indices.numel()) +
                                " indices but " + std::to_string(values.numel()) + " values");
  if (indices.numel() && indices.max().item<int64_t>() > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("encode_sparse: index beyond the int32 range");
  at::Tensor out = at::empty({sparse_payload_bytes(indices.numel())},
                             at::TensorOptions().dtype(at::kByte).device(values.device()));
  const int64_t n = indices.numel();
  // Write both halves in place: the int32 and fp32 views of the byte buffer.
  out.narrow(0, 0, 4 * n).view(at::kInt).copy_(indices.reshape({-1}));
  out.narrow(0, 4 * n, 4 * n).view(at::kFloat).copy_(values.reshape({-1}));
  return out;
}

SparseView decode_sparse(const at::Tensor& payload) {
  if (payload.scalar_type() != at::kByte || payload.dim() != 1)
    throw std::invalid_argument("decode_sparse: expected a 1-D uint8 payload");
  const int64_t bytes = payload.numel();
  if (bytes % kSparseBytesPerEntry != 0)
    throw std::invalid_argument("decode_sparse: payload of " + std::to_string(bytes) +
                                " bytes is not a whole number of 8-byte (index, value) pairs");
  const int64_t n = bytes / kSparseBytesPerEntry;
  at::Tensor c = payload.contiguous();
  if (!c.is_cpu())  // read where it is
    return {generic::reinterpret(c.narrow(0, 0, 4 * n), at::kInt).to(at::kLong),
            generic::reinterpret(c.narrow(0, 4 * n, 4 * n), at::kFloat).clone()};
  return {from_bytes(c.narrow(0, 0, 4 * n), at::kInt).to(at::kLong),
          from_bytes(c.narrow(0, 4 * n, 4 * n), at::kFloat)};
}

namespace {

// The pairs of a payload off the CPU, checked as the CPU decoder checks them (strictly ascending
// within [0, numel)) with one synchronisation.
SparseView checked_pairs(const at::Tensor& payload, int64_t numel, const char* who) {
  SparseView s = decode_sparse(payload);
  const int64_t k = s.indices.numel();
  if (k == 0) return s;
  const at::Tensor ok = s.indices.min().ge(0).logical_and(s.indices.max().lt(numel));
  const bool fine =
      (k > 1 ? ok.logical_and(s.indices.slice(0, 1).gt(s.indices.slice(0, 0, k - 1)).all()) : ok)
          .item<bool>();
  if (!fine)
    throw std::invalid_argument(std::string(who) + ": indices not strictly ascending within [0, " +
                                std::to_string(numel) + ")");
  return s;
}

// The 1-D uint8 payload's bytes; throws naming `who` otherwise.
const uint8_t* payload_bytes_of(const at::Tensor& payload, const char* who) {
  if (payload.scalar_type() != at::kByte || payload.dim() != 1 || !payload.is_cpu())
    throw std::invalid_argument(
        std::string(who) + ": expected a 1-D uint8 payload, got " + std::to_string(payload.dim()) +
        "-D " + c10::toString(payload.scalar_type()) + " on " + payload.device().str());
  return payload.numel() ? payload.data_ptr<uint8_t>() : nullptr;
}

// A payload of (int32 index, fp32 value) pairs: its bytes and its pair count; throws naming `who`
// when it is not a 1-D uint8 CPU tensor of whole 8-byte pairs. `c` keeps the bytes alive.
std::pair<const uint8_t*, int64_t> sparse_pairs(const at::Tensor& payload, at::Tensor& c,
                                                const char* who) {
  c = payload.contiguous();
  const uint8_t* p = payload_bytes_of(c, who);
  if (c.numel() % kSparseBytesPerEntry != 0)
    throw std::invalid_argument(std::string(who) + ": payload of " + std::to_string(c.numel()) +
                                " bytes is not a whole number of 8-byte (index, value) pairs");
  return {p, c.numel() / kSparseBytesPerEntry};
}

}  // namespace

at::Tensor SparseCompressor::compress(const at::Tensor& x, at::Generator& gen) {
  at::Tensor idx = select(x, gen).to(x.device());
  return encode_sparse(idx, x.reshape({-1}).index_select(0, idx));
}

at::Tensor SparseCompressor::decompress(const at::Tensor& payload, int64_t numel) {
  if (numel < 0)
    throw std::invalid_argument("sparse decode: negative element count " + std::to_string(numel));
  at::Tensor out = at::empty({numel}, payload.options().dtype(at::kFloat));
  decompress_into(payload, out);
  return out;
}

void SparseCompressor::decompress_into(const at::Tensor& payload, at::Tensor& out) {
  check_decode_target(out, "sparse decode", true);
  if (!out.is_cpu()) {
    const SparseView s = checked_pairs(payload.to(out.device()), out.numel(), "sparse decode");
    out.zero_().view({-1}).index_put_({s.indices}, s.values);
    return;
  }
  at::Tensor c;
  const auto [p, k] = sparse_pairs(payload, c, "sparse decode");
  scatter_into_zeros<int32_t>(p, p + 4 * k, k, out.data_ptr<float>(), out.numel(), "sparse decode");
}

void SparseCompressor::subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor&) {
  check_decode_target(x, "sparse subtract", true);
  if (!x.is_cpu()) {  // x[i] − v at the payload's indices, where x is
    const SparseView s = checked_pairs(payload.to(x.device()), x.numel(), "sparse subtract");
    at::Tensor flat = x.view({-1});
    flat.index_put_({s.indices}, flat.index_select(0, s.indices).sub_(s.values));
    return;
  }
  at::Tensor c;
  const auto [p, k] = sparse_pairs(payload, c, "sparse subtract");
  subtract_at<int32_t>(p, p + 4 * k, k, x.data_ptr<float>(), x.numel(), "sparse subtract");
}

at::Tensor RandomKCompressor::decompress(const at::Tensor& payload, int64_t numel) {
  if (!values_only_) return SparseCompressor::decompress(payload, numel);
  if (numel < 0)
    throw std::invalid_argument("random-k: negative element count " + std::to_string(numel));
  at::Tensor out = at::empty({numel}, payload.options().dtype(at::kFloat));
  decompress_into(payload, out);
  return out;
}

void RandomKCompressor::decompress_into(const at::Tensor& payload, at::Tensor& out) {
  if (!values_only_) return SparseCompressor::decompress_into(payload, out);
  check_decode_target(out, "random-k", true);
  if (!last_indices_.defined())
    throw std::logic_error("random-k: values-only payload decoded without its index set");
  if (!out.is_cpu()) {
    const at::Tensor values = shared_values(payload, out.device(), "random-k");
    out.zero_().view({-1}).index_put_({last_indices_.to(out.device())}, values);
    return;
  }
  // Exactly one fp32 value per shared index: from_bytes would drop a partial value unnoticed.
  const at::Tensor c = payload.contiguous();
  const uint8_t* p = payload_bytes_of(c, "random-k");
  const at::Tensor idx = last_indices_.to(at::kCPU, at::kLong).contiguous();
  const int64_t k = idx.numel();
  if (c.numel() != 4 * k)
    throw std::invalid_argument("random-k: a values-only payload of " + std::to_string(c.numel()) +
                                " bytes for " + std::to_string(k) + " shared indices (expected " +
                                std::to_string(4 * k) + ": one fp32 value each)");
  scatter_into_zeros<int64_t>(reinterpret_cast<const uint8_t*>(idx.data_ptr<int64_t>()), p, k,
                              out.data_ptr<float>(), out.numel(), "random-k");
}

void RandomKCompressor::subtract_decoded(const at::Tensor& payload, at::Tensor& x,
                                         at::Tensor& scratch) {
  if (!values_only_) return SparseCompressor::subtract_decoded(payload, x, scratch);
  check_decode_target(x, "random-k subtract", true);
  if (!last_indices_.defined())
    throw std::logic_error("random-k: values-only payload subtracted without its index set");
  if (!x.is_cpu()) {
    const at::Tensor values = shared_values(payload, x.device(), "random-k subtract");
    const at::Tensor idx = last_indices_.to(x.device());
    at::Tensor flat = x.view({-1});
    flat.index_put_({idx}, flat.index_select(0, idx).sub_(values));
    return;
  }
  const at::Tensor c = payload.contiguous();
  const uint8_t* p = payload_bytes_of(c, "random-k subtract");
  const at::Tensor idx = last_indices_.to(at::kCPU, at::kLong).contiguous();
  const int64_t k = idx.numel();
  if (c.numel() != 4 * k)
    throw std::invalid_argument("random-k subtract: a values-only payload of " +
                                std::to_string(c.numel()) + " bytes for " + std::to_string(k) +
                                " shared indices");
  subtract_at<int64_t>(reinterpret_cast<const uint8_t*>(idx.data_ptr<int64_t>()), p, k,
                       x.data_ptr<float>(), x.numel(), "random-k subtract");
}

at::Tensor RandomKCompressor::shared_values(const at::Tensor& payload, at::Device device,
                                            const char* who) const {
  const int64_t k = last_indices_.numel();
  if (payload.scalar_type() != at::kByte || payload.dim() != 1 || payload.numel() != 4 * k)
    throw std::invalid_argument(std::string(who) + ": a values-only payload of " +
                                std::to_string(payload.numel()) + " bytes for " +
                                std::to_string(k) + " shared indices (expected " +
                                std::to_string(4 * k) + ": one fp32 value each)");
  return generic::reinterpret(payload.to(device), at::kFloat);
}

std::vector<SparseView> allgather_sparse(const at::Tensor& payload, Communicator& comm) {
  std::vector<SparseView> out;
  // The encoding travels on the communicator's device and is decoded where the payload was made.
  for (const at::Tensor& buf : comm.allgatherv(payload.to(comm.device())))
    out.push_back(decode_sparse(buf.to(payload.device())));
  return out;
}

void scatter_add_segments(const SparseView& s, const std::vector<at::Tensor>& segments,
                          double scale) {
  const int64_t n = s.indices.numel();
  if (n == 0 || segments.empty()) return;
  if (n > 1 && !(s.indices.slice(0, 1).gt(s.indices.slice(0, 0, n - 1))).all().item<bool>())
    throw std::invalid_argument("scatter_add_segments: indices are not strictly ascending");
  std::vector<int64_t> bounds;  // start of each segment, then the end of the last
  int64_t total = 0;
  for (const auto& seg : segments) {
    bounds.push_back(total);
    total += seg.numel();
  }
  bounds.push_back(total);
  if (s.indices[n - 1].item<int64_t>() >= total || s.indices[0].item<int64_t>() < 0)
    throw std::invalid_argument("scatter_add_segments: index outside the " + std::to_string(total) +
                                " addressed elements");
  // The cut points of the (few) segments come to the host; the pairs stay where they are.
  at::Tensor cut =
      at::searchsorted(s.indices, at::tensor(bounds, at::kLong).to(s.indices.device())).cpu();
  auto c = cut.accessor<int64_t, 1>();
  const at::Device device = segments.front().device();
  at::Tensor indices = s.indices.to(device);
  at::Tensor values = (scale == 1.0 ? s.values : s.values * scale).to(device);
  for (size_t j = 0; j < segments.size(); ++j) {
    const int64_t lo = c[j], len = c[j + 1] - c[j];
    if (len == 0) continue;
    at::Tensor seg = segments[j];
    seg.index_add_(0, indices.narrow(0, lo, len) - bounds[j], values.narrow(0, lo, len));
  }
}

void rescale_memory_for_lr(ErrorFeedback& ef, const GradBucket& bucket,
                           std::map<int64_t, double>& last_lr, double lr) {
  auto it = last_lr.find(bucket.index);
  if (it != last_lr.end() && it->second > 0 && lr > 0 && it->second != lr) {
    for (const auto& e : bucket.entries) {
      auto m = ef.memories().find(e.name);
      if (m != ef.memories().end() && m->second.defined()) m->second.mul_(it->second / lr);
    }
  }
  if (lr > 0) last_lr[bucket.index] = lr;
}

void LrScaledMemory::save(AlgorithmState& out) const {
  save_tensor_map(out, "memory.", memory_.memories_view());
  save_number_map(out, "last_lr", last_lr_);
}

void LrScaledMemory::load(const AlgorithmState& in) {
  load_tensor_map(in, "memory.", memory_.memories());
  last_lr_ = load_number_map(in, "last_lr");
}

Bound keep_ratio_bound() {
  Bound b = in_range(0, 1);
  b.lo_open = true;
  return b;
}

}  // namespace cedar
