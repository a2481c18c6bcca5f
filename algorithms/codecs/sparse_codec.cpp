#include "algorithms/codecs/sparse_codec.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/sparse_scatter.h"

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

SparseView checked_sparse_pairs(const at::Tensor& payload, int64_t numel, const char* who) {
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

const uint8_t* cpu_payload_bytes(const at::Tensor& payload, const char* who) {
  if (payload.scalar_type() != at::kByte || payload.dim() != 1 || !payload.is_cpu())
    throw std::invalid_argument(
        std::string(who) + ": expected a 1-D uint8 payload, got " + std::to_string(payload.dim()) +
        "-D " + c10::toString(payload.scalar_type()) + " on " + payload.device().str());
  return payload.numel() ? payload.data_ptr<uint8_t>() : nullptr;
}

std::pair<const uint8_t*, int64_t> cpu_sparse_pairs(const at::Tensor& payload, at::Tensor& c,
                                                    const char* who) {
  c = payload.contiguous();
  const uint8_t* p = cpu_payload_bytes(c, who);
  if (c.numel() % kSparseBytesPerEntry != 0)
    throw std::invalid_argument(std::string(who) + ": payload of " + std::to_string(c.numel()) +
                                " bytes is not a whole number of 8-byte (index, value) pairs");
  return {p, c.numel() / kSparseBytesPerEntry};
}

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
    const SparseView s =
        checked_sparse_pairs(payload.to(out.device()), out.numel(), "sparse decode");
    out.zero_().view({-1}).index_put_({s.indices}, s.values);
    return;
  }
  at::Tensor c;
  const auto [p, k] = cpu_sparse_pairs(payload, c, "sparse decode");
  scatter_into_zeros<int32_t>(p, p + 4 * k, k, out.data_ptr<float>(), out.numel(), "sparse decode");
}

void SparseCompressor::subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor&) {
  check_decode_target(x, "sparse subtract", true);
  if (!x.is_cpu()) {  // x[i] − v at the payload's indices, where x is
    const SparseView s = checked_sparse_pairs(payload.to(x.device()), x.numel(), "sparse subtract");
    at::Tensor flat = x.view({-1});
    flat.index_put_({s.indices}, flat.index_select(0, s.indices).sub_(s.values));
    return;
  }
  at::Tensor c;
  const auto [p, k] = cpu_sparse_pairs(payload, c, "sparse subtract");
  subtract_at<int32_t>(p, p + 4 * k, k, x.data_ptr<float>(), x.numel(), "sparse subtract");
}

}  // namespace cedar
