#include "runner/train/fusion_schedule.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace cedar {
namespace {

// ready[i]: when layer i's gradient is ready, from backward's start.
std::vector<double> ready_times(const std::vector<FusionLayer>& layers) {
  std::vector<double> ready;
  double t = 0;
  for (const auto& l : layers) ready.push_back(t += l.backward_seconds);
  return ready;
}

}  // namespace

AllreduceCost allreduce_cost(AllreduceScheme scheme, int world, const NetworkProfile& net,
                             const NetworkProfile& intra, int ranks_per_node) {
  // The terms are affine in the bytes: their value at 0 is the startup, the rise per byte the
  // rest.
  auto affine = [](const NetworkProfile& p, AllreduceScheme s, int ranks) {
    if (ranks <= 1) return AllreduceCost{};
    const AllreduceTerms at0 = allreduce_terms(s, ranks, 0), at1 = allreduce_terms(s, ranks, 1);
    return AllreduceCost{p.cost("allreduce", ranks, at0.latency_steps, at0.bus_bytes),
                         p.cost("allreduce", ranks, 0, at1.bus_bytes - at0.bus_bytes)};
  };
  if (scheme != AllreduceScheme::two_level) return affine(net, scheme, world);
  two_level_allreduce_terms(world, ranks_per_node, 0);  // throws for unequal nodes
  const AllreduceCost inside = affine(intra, AllreduceScheme::tree, ranks_per_node);
  const AllreduceCost between = affine(net, AllreduceScheme::ring, world / ranks_per_node);
  return {inside.startup + between.startup, inside.per_byte + between.per_byte};
}

double predicted_exchange_end(const std::vector<FusionLayer>& layers, const FusionGroups& groups,
                              const AllreduceCost& cost) {
  const std::vector<double> ready = ready_times(layers);
  double end = 0;
  size_t next = 0;
  for (const int64_t n : groups) {
    if (n <= 0 || next + static_cast<size_t>(n) > layers.size())
      throw std::invalid_argument("fusion: a bucket of " + std::to_string(n) +
                                  " layers after layer " + std::to_string(next) + " of " +
                                  std::to_string(layers.size()));
    double bytes = 0;
    for (int64_t k = 0; k < n; ++k) bytes += double(layers[next++].bytes);
    end = std::max(end, ready[next - 1]) + cost.seconds(bytes);
  }
  if (next != layers.size())
    throw std::invalid_argument("fusion: the buckets hold " + std::to_string(next) + " of " +
                                std::to_string(layers.size()) + " layers");
  return end;
}

FusionGroups size_groups(const std::vector<FusionLayer>& layers, int64_t bucket_bytes) {
  FusionGroups groups;
  int64_t current = 0;
  for (const auto& l : layers) {
    if (groups.empty() || (current > 0 && current + l.bytes > bucket_bytes)) {
      groups.push_back(0);
      current = 0;
    }
    ++groups.back();
    current += l.bytes;
  }
  return groups;
}

FusionGroups mgwfbp_groups(const std::vector<FusionLayer>& layers, const AllreduceCost& cost) {
  if (layers.empty()) return {};
  const std::vector<double> ready = ready_times(layers);
  FusionGroups groups = {1};
  // The exchange of the current (last) bucket starts once its last gradient is ready and the
  // buckets before it are exchanged: end_before is when the earlier buckets' exchanges end.
  double end_before = 0, bytes = double(layers[0].bytes);
  for (size_t i = 1; i < layers.size(); ++i) {
    const double start = std::max(end_before, ready[i - 1]);
    if (ready[i] - start < cost.startup) {
      ++groups.back();
    } else {
      end_before = start + cost.seconds(bytes);
      groups.push_back(1);
      bytes = 0;
    }
    bytes += double(layers[i].bytes);
  }
  return groups;
}

FusionGroups optimal_groups(const std::vector<FusionLayer>& layers, const AllreduceCost& cost) {
  const size_t n = layers.size();
  if (n == 0) return {};
  const std::vector<double> ready = ready_times(layers);
  std::vector<double> prefix_bytes(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix_bytes[i + 1] = prefix_bytes[i] + double(layers[i].bytes);
  // end[k][j]: the least end of the first j layers in k buckets; first[k][j]: the first layer of
  // that grouping's last bucket.
  const double never = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> end(n + 1, std::vector<double>(n + 1, never));
  std::vector<std::vector<size_t>> first(n + 1, std::vector<size_t>(n + 1, 0));
  end[0][0] = 0;
  for (size_t k = 1; k <= n; ++k)
    for (size_t j = k; j <= n; ++j)
      for (size_t i = k - 1; i < j; ++i) {
        if (end[k - 1][i] == never) continue;
        const double e =
            std::max(end[k - 1][i], ready[j - 1]) + cost.seconds(prefix_bytes[j] - prefix_bytes[i]);
        if (e < end[k][j]) {
          end[k][j] = e;
          first[k][j] = i;
        }
      }
  // The fewest buckets whose end is the least (to rounding).
  double least = never;
  for (size_t k = 1; k <= n; ++k) least = std::min(least, end[k][n]);
  size_t k = 1;
  while (end[k][n] > least + 1e-12 * std::max(1.0, least)) ++k;
  FusionGroups groups;
  for (size_t j = n; k > 0; --k) {
    groups.push_back(static_cast<int64_t>(j - first[k][j]));
    j = first[k][j];
  }
  std::reverse(groups.begin(), groups.end());
  return groups;
}

std::vector<double> bucket_size_candidates_mib(double configured_mib) {
  std::vector<double> c = {1, 2, 4, 8, 16, 32, 64};
  if (std::find(c.begin(), c.end(), configured_mib) == c.end()) c.push_back(configured_mib);
  std::sort(c.begin(), c.end());
  return c;
}

namespace {

int64_t mib_bytes(double mib) { return static_cast<int64_t>(mib * 1024 * 1024); }

}  // namespace

BucketSizeChoice autotune_bucket_size(const std::vector<FusionLayer>& layers,
                                      const AllreduceCost& cost,
                                      const std::vector<double>& candidates_mib) {
  if (candidates_mib.empty()) throw std::invalid_argument("fusion auto: no candidate bucket size");
  BucketSizeChoice best;
  best.predicted_seconds = std::numeric_limits<double>::infinity();
  for (const double mib : candidates_mib) {
    FusionGroups g = size_groups(layers, mib_bytes(mib));
    const double t = predicted_exchange_end(layers, g, cost);
    if (t < best.predicted_seconds || (t == best.predicted_seconds && mib < best.bucket_mib))
      best = {mib, std::move(g), t};
  }
  return best;
}

const std::vector<std::string>& fusion_mode_names() {
  static const std::vector<std::string> kNames = {"size", "mgwfbp", "optimal", "auto"};
  return kNames;
}

FusionMode parse_fusion_mode(const std::string& name) {
  const auto& names = fusion_mode_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<FusionMode>(i);
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("train.fusion: unknown value '" + name + "' (known: " + known + ")");
}

FusionPlan plan_fusion(FusionMode mode, const std::vector<FusionLayer>& layers,
                       const AllreduceCost& cost, double bucket_mib) {
  FusionPlan plan;
  plan.mode = mode;
  plan.bucket_mib = bucket_mib;
  const FusionGroups fixed = size_groups(layers, mib_bytes(bucket_mib));
  plan.size_predicted_seconds = predicted_exchange_end(layers, fixed, cost);
  switch (mode) {
    case FusionMode::size: plan.groups = fixed; break;
    case FusionMode::mgwfbp: plan.groups = mgwfbp_groups(layers, cost); break;
    case FusionMode::optimal: plan.groups = optimal_groups(layers, cost); break;
    case FusionMode::autotune: {
      BucketSizeChoice c =
          autotune_bucket_size(layers, cost, bucket_size_candidates_mib(bucket_mib));
      plan.groups = std::move(c.groups);
      plan.bucket_mib = c.bucket_mib;
      break;
    }
  }
  plan.predicted_seconds = predicted_exchange_end(layers, plan.groups, cost);
  return plan;
}

}  // namespace cedar
