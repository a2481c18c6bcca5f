#pragma once
// Regression data sets for full-batch convex experiments: M shards of n feature vectors, one
// shard per worker (train.full_batch), as in the synthetic experiments of LAG (Chen, Giannakis,
// Sun, Yin, NeurIPS 2018, Sec. 5). datasets/regression.cpp states each construction.
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace cedar {

struct RegressionSet {
  std::string task;        // "linear" (real targets) or "logistic" (targets ±1)
  int64_t shards = 0;      // M
  torch::Tensor features;  // float32 [M·n, d]; shard m is rows [m·n, (m+1)·n)
  torch::Tensor targets;   // float32 [M·n]
  int64_t per_shard() const { return shards > 0 ? features.size(0) / shards : 0; }
  int64_t dim() const { return features.size(1); }
  torch::Tensor shard_features(int64_t m) const;
  torch::Tensor shard_targets(int64_t m) const;
};

// LAG's increasing smoothness constants. Q is the orthogonal factor of a d x d standard
// Gaussian matrix; shard m (m = 1..M, M <= d) holds the d rows of X_m = I + growth^(m−1) q_m q_mᵀ
// (q_m the m-th column of Q), every shard the same targets y: standard Gaussian (linear) or
// uniform random signs (logistic). Then λ_max(X_mᵀX_m) = (1 + growth^(m−1))², so the smoothness
// of shard m's mean loss, L_m = (1 + growth^(m−1))² / d for least squares, grows with m. All from
// one std::mt19937_64 seeded by `seed`, with our own Box–Muller and Gram–Schmidt in float64, so
// the set is the same on every standard library.
RegressionSet make_increasing_smoothness(int64_t shards, int64_t dim, double growth,
                                         const std::string& task, uint64_t seed);

// A least-squares problem on which signSGD with majority vote stops short of the optimum and
// EF-signSGD does not (datasets/regression.cpp says why): `shards` workers (odd, >= 3), each the
// d unit vectors e_1..e_d as features, with targets b_m: the first (shards+1)/2 workers b + 1,
// the others b − 10 (b a seeded vector of values in [−1, 1]).
RegressionSet make_sign_counterexample(int64_t shards, int64_t dim, uint64_t seed);

}  // namespace cedar
