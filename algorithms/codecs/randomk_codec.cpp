#include "algorithms/codecs/randomk_codec.h"

#include <ATen/ATen.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/sparse_scatter.h"

namespace cedar {

at::Tensor RandomKCompressor::select(const at::Tensor& x, at::Generator& gen) {
  const int64_t n = x.numel();
  const int64_t k = keep_count(n, ratio_);
  if (k >= n) return at::arange(n, at::kLong);
  at::Tensor idx = at::empty({k}, at::kLong);
  sampler_.draw(draw_key(gen), n, k, idx.data_ptr<int64_t>());
  return idx;
}

at::Tensor RandomKCompressor::compress(const at::Tensor& x, at::Generator& gen) {
  last_indices_ = select(x, gen);
  const int64_t n = x.numel(), k = last_indices_.numel();
  if (!values_only_ && n > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("random-k: " + std::to_string(n) +
                                " elements do not fit the int32 indices of the sparse encoding");
  if (!x.is_cpu()) {
    // The index set depends on (key, n, k) alone: drawn on the host (Floyd's sampler is
    // sequential), its k indices go to the device and the values are gathered and encoded there.
    last_indices_ = last_indices_.to(x.device());
    const at::Tensor values =
        x.detach().reshape({-1}).index_select(0, last_indices_).to(at::kFloat).contiguous();
    return values_only_ ? values.view(at::kByte) : encode_sparse(last_indices_, values);
  }
  const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
  at::Tensor out = at::empty({payload_bytes(n)}, at::kByte);
  uint8_t* p = out.data_ptr<uint8_t>();  // 64-byte aligned: both parts are 4-byte aligned
  int32_t* index = values_only_ ? nullptr : reinterpret_cast<int32_t*>(p);
  float* value = reinterpret_cast<float*>(values_only_ ? p : p + 4 * k);
  const int64_t* ix = last_indices_.data_ptr<int64_t>();
  const float* xv = v.data_ptr<float>();
  // The values lie about 1/ratio elements apart: their loads are started a few entries ahead.
  constexpr int64_t kAhead = 16;
  for (int64_t j = 0; j < k; ++j) {
    if (j + kAhead < k) __builtin_prefetch(xv + ix[j + kAhead]);
    value[j] = xv[ix[j]];
    if (index) index[j] = static_cast<int32_t>(ix[j]);
  }
  return out;
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
  const uint8_t* p = cpu_payload_bytes(c, "random-k");
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
  const uint8_t* p = cpu_payload_bytes(c, "random-k subtract");
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

}  // namespace cedar
