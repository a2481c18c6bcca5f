#include "algorithms/exchange/sparse_exchange.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "algorithms/algorithm_state.h"
#include "comm/communicator.h"

namespace cedar {

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

Bound sparsifier_scope_bound() { return one_of({"layer", "global"}); }

GradBucket whole_model_bucket(const GradBucket& bucket, int64_t model_numel, const char* who) {
  const int64_t n = bucket.flat.numel();
  if (model_numel > 0 && n != model_numel) {
    const int64_t mib = (4 * model_numel + (int64_t{1} << 20) - 1) >> 20;
    throw std::invalid_argument(
        std::string(who) + ": scope: global selects over the whole model (" +
        std::to_string(model_numel) + " values), but gradient bucket " +
        std::to_string(bucket.index) + " holds " + std::to_string(n) +
        ": the model spans several buckets; set train.bucket_mb to at least " +
        std::to_string(mib) + " so that its fp32 gradients fit one bucket");
  }
  GradBucket whole;
  whole.index = bucket.index;
  whole.flat = bucket.flat;
  whole.entries.push_back({"bucket." + std::to_string(bucket.index), at::Tensor(), bucket.flat});
  return whole;
}

}  // namespace cedar
