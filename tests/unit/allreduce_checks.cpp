#include "tests/unit/allreduce_checks.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <functional>
#include <string>

#include "comm/metered_communicator.h"

namespace cedar::testing {
namespace {

// Chunk c of n elements in `parts`: n / parts elements, one more for the first n % parts chunks.
int64_t chunk(int64_t n, int parts, int c) { return n / parts + (c < n % parts ? 1 : 0); }
int64_t offset(int64_t n, int parts, int c) {
  int64_t o = 0;
  for (int i = 0; i < c; ++i) o += chunk(n, parts, i);
  return o;
}

at::Tensor ring_order(const std::vector<at::Tensor>& x) {
  const int p = static_cast<int>(x.size());
  const int64_t n = x[0].numel();
  at::Tensor out = at::empty_like(x[0]);
  for (int c = 0; c < p; ++c) {
    const int64_t o = offset(n, p, c), len = chunk(n, p, c);
    // Chunk c starts at rank c and picks up rank c+1, c+2, ... on its way round.
    at::Tensor acc = x[c].narrow(0, o, len).clone();
    for (int k = 1; k < p; ++k) acc = acc + x[(c + k) % p].narrow(0, o, len);
    out.narrow(0, o, len).copy_(acc);
  }
  return out;
}

at::Tensor halving_doubling_order(const std::vector<at::Tensor>& x) {
  const int p = static_cast<int>(x.size());
  int core = 1;
  while (2 * core <= p) core *= 2;
  const int extra = p - core;
  std::vector<at::Tensor> v(core);
  for (int q = 0; q < core; ++q) v[q] = q < extra ? x[2 * q] + x[2 * q + 1] : x[q + extra];
  // Partners at distance core/2, then core/4, ..., 1 add what each holds.
  for (int d = core / 2; d >= 1; d /= 2) {
    std::vector<at::Tensor> next(core);
    for (int q = 0; q < core; ++q) next[q] = v[q] + v[q ^ d];
    v = next;
  }
  return v[0];
}

// A binary tree on x[first..first+size): own value, plus the right subtree, plus the left.
at::Tensor tree_order(const std::vector<at::Tensor>& x, int first, int size) {
  std::function<at::Tensor(int)> subtree = [&](int i) {
    at::Tensor acc = x[first + i].clone();
    if (2 * i + 2 < size) acc = acc + subtree(2 * i + 2);
    if (2 * i + 1 < size) acc = acc + subtree(2 * i + 1);
    return acc;
  };
  return subtree(0);
}

}  // namespace

at::Tensor scheme_input(int rank, int64_t n) {
  at::Generator gen = at::detail::createCPUGenerator(uint64_t(1000003) * rank + uint64_t(n));
  return at::randn({n}, gen, at::kFloat);
}

at::Tensor reference_sum(AllreduceScheme scheme, const std::vector<at::Tensor>& inputs,
                         int ranks_per_node) {
  const int p = static_cast<int>(inputs.size());
  switch (scheme) {
    case AllreduceScheme::ring: return ring_order(inputs);
    case AllreduceScheme::halving_doubling: return halving_doubling_order(inputs);
    case AllreduceScheme::tree: return tree_order(inputs, 0, p);
    case AllreduceScheme::two_level: {
      std::vector<at::Tensor> leaders;
      for (int first = 0; first < p; first += ranks_per_node)
        leaders.push_back(tree_order(inputs, first, ranks_per_node));
      return ring_order(leaders);
    }
    case AllreduceScheme::library: break;
  }
  ADD_FAILURE() << "no reference order for the library's allreduce";
  return at::Tensor();
}

SentByRank ring_sent(int rank, int world, int64_t n) {
  if (world < 2) return {};
  // Reduce-scatter sends every chunk but (rank+1)'s, allgather every chunk but (rank+2)'s.
  const int64_t elements =
      2 * n - chunk(n, world, (rank + 1) % world) - chunk(n, world, (rank + 2) % world);
  return {4 * elements, 2 * int64_t(world - 1)};
}

SentByRank halving_doubling_sent(int rank, int world, int64_t n) {
  if (world < 2) return {};
  int core = 1, steps = 0;
  while (2 * core <= world) core *= 2, ++steps;
  const int extra = world - core;
  if (rank < 2 * extra && rank % 2 == 1) return {4 * n, 1};  // hands its vector over, once
  const int q = rank < 2 * extra ? rank / 2 : rank - extra;
  int64_t elements = 0;
  for (int d = core / 2; d >= 1; d /= 2) {  // gives away the half of its block it does not keep
    const int give = (q & ~(2 * d - 1)) + ((q & d) ? 0 : d);
    for (int c = give; c < give + d; ++c) elements += chunk(n, core, c);
  }
  for (int d = 1; d < core; d *= 2) {  // sends the block of d chunks it holds
    const int held = q & ~(d - 1);
    for (int c = held; c < held + d; ++c) elements += chunk(n, core, c);
  }
  SentByRank s{4 * elements, 2 * int64_t(steps)};
  if (rank < 2 * extra) s.bytes += 4 * n, s.messages += 1;  // the result to its odd neighbour
  return s;
}

SentByRank tree_sent(int rank, int world, int64_t n) {
  if (world < 2) return {};
  // Up to the parent once (not the root), down to each child once.
  const int64_t children = (2 * rank + 1 < world ? 1 : 0) + (2 * rank + 2 < world ? 1 : 0);
  const int64_t messages = (rank > 0 ? 1 : 0) + children;
  return {4 * n * messages, messages};
}

at::Tensor check_allreduce_scheme(Communicator& backend, AllreduceScheme scheme, int64_t n,
                                  int ranks_per_node) {
  MeteredCommunicator comm(backend);
  comm.use_allreduce(scheme, ranks_per_node);
  const int p = comm.size(), r = comm.rank();
  const std::string what = allreduce_scheme_name(scheme) + " on " + std::to_string(p) + " ranks, " +
                           std::to_string(n) + " elements, rank " + std::to_string(r);
  std::vector<at::Tensor> inputs;
  for (int i = 0; i < p; ++i) inputs.push_back(scheme_input(i, n));
  at::Tensor t = inputs[r].clone();
  comm.allreduce_sum(t);

  EXPECT_TRUE(at::equal(t, reference_sum(scheme, inputs, ranks_per_node))) << what;
  at::Tensor exact = at::zeros({n}, at::kDouble), magnitude = at::zeros({n}, at::kDouble);
  for (const auto& x : inputs) exact += x.to(at::kDouble), magnitude += x.to(at::kDouble).abs();
  // p - 1 roundings of at most FLT_EPSILON / 2 relative to the partial sums' magnitudes.
  const at::Tensor error = (t.to(at::kDouble) - exact).abs();
  EXPECT_TRUE((error <= magnitude * (p * FLT_EPSILON / 2)).all().item<bool>())
      << what << ": max error " << error.max().item<double>();

  const auto& totals = comm.totals();
  if (scheme == AllreduceScheme::two_level) {
    const int local = r % ranks_per_node, nodes = p / ranks_per_node;
    const SentByRank intra = tree_sent(local, ranks_per_node, n);
    const SentByRank inter = local == 0 ? ring_sent(r / ranks_per_node, nodes, n) : SentByRank{};
    EXPECT_EQ(totals.count("intra/allreduce"), ranks_per_node > 1 ? 1u : 0u) << what;
    EXPECT_EQ(totals.count("inter/allreduce"), local == 0 && nodes > 1 ? 1u : 0u) << what;
    if (ranks_per_node > 1) {
      EXPECT_EQ(totals.at("intra/allreduce").bus_bytes, intra.bytes) << what;
      EXPECT_EQ(totals.at("intra/allreduce").latency_steps, intra.messages) << what;
      EXPECT_EQ(totals.at("intra/allreduce").payload_bytes, 4 * n) << what;
      EXPECT_EQ(comm.level_ranks().at("intra"), ranks_per_node) << what;
    }
    if (local == 0 && nodes > 1) {
      EXPECT_EQ(totals.at("inter/allreduce").bus_bytes, inter.bytes) << what;
      EXPECT_EQ(totals.at("inter/allreduce").latency_steps, inter.messages) << what;
      EXPECT_EQ(comm.level_ranks().at("inter"), nodes) << what;
    }
    EXPECT_EQ(comm.step().bus_bytes, intra.bytes + inter.bytes) << what;
    return t;
  }
  const SentByRank sent = scheme == AllreduceScheme::ring   ? ring_sent(r, p, n)
                          : scheme == AllreduceScheme::tree ? tree_sent(r, p, n)
                                                            : halving_doubling_sent(r, p, n);
  // The scheme's messages are its allreduce's: nothing else is recorded.
  EXPECT_EQ(totals.size(), 1u) << what;
  EXPECT_EQ(totals.at("allreduce").calls, 1) << what;
  EXPECT_EQ(totals.at("allreduce").payload_bytes, 4 * n) << what;
  EXPECT_EQ(totals.at("allreduce").bus_bytes, sent.bytes) << what;
  EXPECT_EQ(totals.at("allreduce").latency_steps, sent.messages) << what;
  return t;
}

}  // namespace cedar::testing
