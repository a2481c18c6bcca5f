#include "algorithms/lazy_aggregate.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "algorithms/algorithm_state.h"
#include "algorithms/codecs/simd.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

bool on_cpu_fp32(const at::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

}  // namespace

double tensor_squared_distance(const at::Tensor& a, const at::Tensor& b) {
  if (on_cpu_fp32(a) && on_cpu_fp32(b) && a.numel() == b.numel())
    return squared_distance(a.data_ptr<float>(), b.data_ptr<float>(), a.numel());
  return (a - b).to(at::kDouble).square().sum().item<double>();
}

bool LazyAggregate::collect(GradBucket& bucket, size_t num_params) {
  if (num_params == 0) throw std::logic_error(name_ + ": setup() must run before reduce_gradients");
  pending_.push_back(&bucket);
  seen_ += bucket.entries.size();
  if (seen_ < num_params) return false;
  std::sort(pending_.begin(), pending_.end(),
            [](const GradBucket* a, const GradBucket* b) { return a->index < b->index; });
  int64_t n = 0;
  for (const auto* b : pending_) n += b->flat.numel();
  allocate(n);
  prepared_ = false;
  return true;
}

void LazyAggregate::allocate(int64_t n) {
  if (last_upload_.defined()) return;
  last_upload_ = at::zeros({n}, pending_[0]->flat.options());
  aggregate_ = at::zeros_like(last_upload_);
}

template <class Fn>
void LazyAggregate::for_each_bucket(Fn fn) {
  int64_t off = 0;
  for (auto* b : pending_) {
    fn(b->flat.data_ptr<float>(), off, b->flat.numel());
    off += b->flat.numel();
  }
}

namespace {

// Whether the collected step runs the fused CPU passes.
bool cpu_path(const std::vector<GradBucket*>& pending, const at::Tensor& last,
              const at::Tensor& aggregate) {
  int64_t n = 0;
  bool cpu = true;
  for (const auto* b : pending) {
    n += b->flat.numel();
    cpu = cpu && on_cpu_fp32(b->flat);
  }
  return cpu && on_cpu_fp32(last) && on_cpu_fp32(aggregate) && last.numel() == n;
}

at::Tensor concatenated(const std::vector<GradBucket*>& pending) {
  std::vector<at::Tensor> flats;
  for (const auto* b : pending) flats.push_back(b->flat);
  return at::cat(flats);
}

}  // namespace

double LazyAggregate::change_since_upload(bool prepare_upload) {
  const int64_t n = last_upload_.numel();
  double change = 0;
  if (!cpu_path(pending_, last_upload_, aggregate_)) {
    next_upload_ = concatenated(pending_);
    delta_ = next_upload_ - last_upload_;
    prepared_ = true;
    return delta_.to(at::kDouble).square().sum().item<double>();
  }
  const float* last = last_upload_.data_ptr<float>();
  if (prepare_upload) {
    if (!delta_.defined() || delta_.numel() != n) delta_ = at::empty({n}, at::kFloat);
    if (!next_upload_.defined() || next_upload_.numel() != n)
      next_upload_ = at::empty({n}, at::kFloat);
  }
  for_each_bucket([&](const float* g, int64_t off, int64_t len) {
    change += prepare_upload
                  ? squared_distance_with_difference(g, last + off, delta_.data_ptr<float>() + off,
                                                     next_upload_.data_ptr<float>() + off, len)
                  : squared_distance(g, last + off, len);
  });
  prepared_ = prepare_upload;
  return change;
}

int64_t LazyAggregate::exchange(Communicator& comm, bool upload) {
  const int64_t n = last_upload_.numel();
  const int64_t uploads = cpu_path(pending_, last_upload_, aggregate_)
                              ? exchange_cpu(comm, upload, n)
                              : exchange_tensors(comm, upload);
  pending_.clear();
  seen_ = 0;
  prepared_ = false;
  return uploads;
}

int64_t LazyAggregate::exchange_cpu(Communicator& comm, bool upload, int64_t n) {
  at::Tensor mine = at::empty({0}, at::kFloat);
  if (upload && prepared_) {  // Δ is written; ĝ ← g
    std::swap(last_upload_, next_upload_);
    mine = delta_;
  } else if (upload) {  // Δ = g − ĝ (what travels) and ĝ ← g, in one pass
    if (!delta_.defined() || delta_.numel() != n) delta_ = at::empty({n}, at::kFloat);
    float* last = last_upload_.data_ptr<float>();
    float* delta = delta_.data_ptr<float>();
    for_each_bucket([&](const float* g, int64_t off, int64_t len) {
      for (int64_t i = 0; i < len; ++i) {
        delta[off + i] = g[i] - last[off + i];
        last[off + i] = g[i];
      }
    });
    mine = delta_;
  }
  std::vector<at::Tensor> deltas;
  for (const at::Tensor& part : comm.allgatherv(mine)) {
    if (part.numel() == 0) continue;
    if (part.numel() != n)
      throw CommError(name_ + ": a rank sent " + std::to_string(part.numel()) +
                      " values, expected " + std::to_string(n));
    deltas.push_back(part.to(at::kCPU, at::kFloat).contiguous());
  }
  // ∇ ← ∇ + (0 + Δ_1 + Δ_2 + ...)/P and every bucket ← ∇ in one pass, chunk by chunk: the fp32
  // operations of the tensor expressions, in their order. For P a power of two the division is a
  // multiplication by 1/P, which rounds the same exact quotient.
  float* aggregate = aggregate_.data_ptr<float>();
  const int ranks = comm.size();
  const bool power_of_two = (ranks & (ranks - 1)) == 0;
  const float divisor = static_cast<float>(ranks), inverse = 1.0f / divisor;
  for_each_bucket([&](float* flat, int64_t off, int64_t len) {
    float sum[kChunk];
    for (int64_t c0 = 0; c0 < len; c0 += kChunk) {
      const int64_t m = std::min(kChunk, len - c0);
      std::fill(sum, sum + m, 0.0f);
      for (const at::Tensor& d : deltas) {
        const float* dp = d.data_ptr<float>() + off + c0;
        for (int64_t i = 0; i < m; ++i) sum[i] += dp[i];
      }
      float* a = aggregate + off + c0;
      float* f = flat + c0;
      if (power_of_two) {
        for (int64_t i = 0; i < m; ++i) f[i] = a[i] += sum[i] * inverse;
      } else {
        for (int64_t i = 0; i < m; ++i) f[i] = a[i] += sum[i] / divisor;
      }
    }
  });
  return static_cast<int64_t>(deltas.size());
}

// exchange_cpu with LibTorch operations, for tensors on another device.
int64_t LazyAggregate::exchange_tensors(Communicator& comm, bool upload) {
  const at::Tensor g = prepared_ ? next_upload_ : concatenated(pending_);
  const at::Tensor delta = !upload     ? at::empty({0}, g.options())
                           : prepared_ ? delta_
                                       : g - last_upload_;
  std::vector<at::Tensor> parts = comm.allgatherv(delta);
  at::Tensor sum = at::zeros_like(g);
  int64_t uploads = 0;
  for (const auto& part : parts) {
    if (part.numel() == 0) continue;
    sum.add_(part.to(g.device()));
    ++uploads;
  }
  aggregate_.add_(sum.div_(static_cast<double>(comm.size())));
  if (upload) last_upload_.copy_(g);

  int64_t off = 0;
  for (auto* b : pending_) {
    b->flat.copy_(aggregate_.narrow(0, off, b->flat.numel()));
    off += b->flat.numel();
  }
  return uploads;
}

void LazyAggregate::save(AlgorithmState& out) const {
  if (!last_upload_.defined()) return;
  out["last_upload"] = last_upload_.clone();
  out["aggregate"] = aggregate_.clone();
}

void LazyAggregate::load(const AlgorithmState& in) {
  if (!in.count("last_upload")) return;
  last_upload_ = load_tensor(in, "last_upload").clone();
  aggregate_ = load_tensor(in, "aggregate").clone();
}

void ParameterMoves::setup(const std::vector<NamedTensor>& params) {
  previous_.clear();
  for (const auto& p : params) previous_.push_back(p.tensor.detach().clone());
}

double ParameterMoves::moved(const std::vector<NamedTensor>& params) {
  double moved = 0;
  for (size_t i = 0; i < params.size() && i < previous_.size(); ++i) {
    const at::Tensor p = params[i].tensor.detach();
    if (on_cpu_fp32(p) && on_cpu_fp32(previous_[i]) && p.numel() == previous_[i].numel()) {
      moved += squared_distance_then_copy(p.data_ptr<float>(), previous_[i].data_ptr<float>(),
                                          p.numel());
      continue;
    }
    moved += (p - previous_[i]).to(at::kDouble).square().sum().item<double>();
    previous_[i].copy_(p);
  }
  return moved;
}

void ParameterMoves::save(AlgorithmState& out) const {
  for (size_t i = 0; i < previous_.size(); ++i)
    out["previous." + std::to_string(i)] = previous_[i].clone();
}

void ParameterMoves::load(const AlgorithmState& in) {
  for (size_t i = 0; i < previous_.size(); ++i)
    previous_[i].copy_(load_tensor(in, "previous." + std::to_string(i)));
}

}  // namespace cedar
