#include "algorithms/codecs/topk_codec.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

namespace cedar {

namespace {

// x as a contiguous 1-D fp32 CPU tensor (a copy only where it is not one already).
at::Tensor cpu_floats(const at::Tensor& x) {
  return x.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
}

}  // namespace

at::Tensor TopKCompressor::select(const at::Tensor& x, at::Generator&) {
  if (!x.is_cpu()) return magnitude_topk_indices(x, keep_count(x.numel(), ratio_));
  const at::Tensor v = cpu_floats(x);
  const int64_t k = keep_count(v.numel(), ratio_);
  std::vector<int32_t> index(static_cast<size_t>(k));
  std::vector<float> value(static_cast<size_t>(k));
  topk_.select(v.data_ptr<float>(), v.numel(), k, index.data(), value.data());
  at::Tensor out = at::empty({k}, at::kLong);
  std::copy(index.begin(), index.end(), out.data_ptr<int64_t>());
  return out;
}

at::Tensor TopKCompressor::compress(const at::Tensor& x, at::Generator& gen) {
  if (!x.is_cpu()) return SparseCompressor::compress(x, gen);  // selected and gathered there
  const at::Tensor v = cpu_floats(x);
  const int64_t k = keep_count(v.numel(), ratio_);
  at::Tensor out = at::empty({sparse_payload_bytes(k)}, at::kByte);
  uint8_t* p = out.data_ptr<uint8_t>();  // 64-byte aligned: both halves are 4-byte aligned
  topk_.select(v.data_ptr<float>(), v.numel(), k, reinterpret_cast<int32_t*>(p),
               reinterpret_cast<float*>(p + 4 * k));
  return out;
}

}  // namespace cedar
