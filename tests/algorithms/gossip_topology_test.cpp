// The gossip graphs (algorithms/gossip/topology.h): each exchange a permutation with its inverse,
// W symmetric and doubly stochastic with uniform weights over the neighbours written out here from
// each graph's definition, coinciding neighbours counted once, and the neighbour exchange on
// in-process ranks.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <set>
#include <string>
#include <vector>

#include "algorithms/codecs/compressor.h"
#include "algorithms/gossip/neighbour_exchange.h"
#include "algorithms/gossip/topology.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

// Rank r's neighbours from the graph's definition (a set, so coinciding ones count once).
std::set<int> neighbours_by_definition(const std::string& name, int p, int r, int rows) {
  std::set<int> n;
  auto add = [&](int x) {
    if (x != r) n.insert(x);
  };
  if (name == "ring") {
    add((r + 1) % p);
    add((r + p - 1) % p);
  } else if (name == "exponential") {
    for (int k = 1; k < p; k *= 2) {
      add((r + k) % p);
      add(((r - k) % p + p) % p);
    }
  } else {  // torus, rows x cols, r = i*cols + j
    const int cols = p / rows, i = r / cols, j = r % cols;
    add(i * cols + (j + 1) % cols);
    add(i * cols + (j + cols - 1) % cols);
    add(((i + 1) % rows) * cols + j);
    add(((i + rows - 1) % rows) * cols + j);
  }
  return n;
}

TEST(GossipTopology, MixingMatrixIsUniformOverTheNeighboursAndDoublyStochastic) {
  for (const std::string name : {"ring", "torus", "exponential"}) {
    for (int p = 1; p <= 12; ++p) {
      const Topology t = make_topology(name, p);
      const auto w = mixing_matrix(t);
      ASSERT_EQ(w.sizes(), (std::vector<int64_t>{p, p}));
      for (int r = 0; r < p; ++r) {
        const auto n = neighbours_by_definition(name, p, r, t.rows);
        EXPECT_EQ(t.degree(), static_cast<int>(n.size())) << name << " P=" << p << " r=" << r;
        for (int c = 0; c < p; ++c) {
          const double expected = (c == r || n.count(c)) ? 1.0 / (n.size() + 1) : 0.0;
          EXPECT_DOUBLE_EQ(w[r][c].item<double>(), expected) << name << " P=" << p;
        }
      }
      EXPECT_TRUE(torch::equal(w, w.t())) << name << " P=" << p << ": W not symmetric";
      EXPECT_TRUE(torch::allclose(w.sum(0), torch::ones({p}, torch::kDouble)));
      EXPECT_TRUE(torch::allclose(w.sum(1), torch::ones({p}, torch::kDouble)));
      for (const auto& e : t.exchanges)
        for (int r = 0; r < p; ++r) {
          EXPECT_EQ(e.from[static_cast<size_t>(e.to[static_cast<size_t>(r)])], r)
              << name << " P=" << p << ": from is not the inverse of to";
          EXPECT_NE(e.to[static_cast<size_t>(r)], r) << name << " P=" << p << ": a self-exchange";
        }
    }
  }
}

TEST(GossipTopology, DegreesOfSmallAndCoincidingGraphs) {
  EXPECT_EQ(make_topology("ring", 1).degree(), 0);
  EXPECT_EQ(make_topology("ring", 2).degree(), 1) << "+1 and -1 are the same neighbour";
  EXPECT_EQ(make_topology("ring", 3).degree(), 2);
  EXPECT_EQ(make_topology("ring", 8).degree(), 2);
  EXPECT_DOUBLE_EQ(make_topology("ring", 8).weight(), 1.0 / 3) << "D-PSGD's ring weights";
  EXPECT_EQ(make_topology("exponential", 4).degree(), 3) << "shifts 1, 3, 2: complete";
  EXPECT_EQ(make_topology("exponential", 8).degree(), 5) << "shifts 1, 7, 2, 6, 4";
  const Topology t8 = make_topology("torus", 8);
  EXPECT_EQ(t8.rows, 2);
  EXPECT_EQ(t8.cols, 4);
  EXPECT_EQ(t8.degree(), 3);
  const Topology t9 = make_topology("torus", 9);
  EXPECT_EQ(t9.rows, 3);
  EXPECT_EQ(t9.degree(), 4);
  EXPECT_EQ(make_topology("torus", 7).rows, 1) << "a prime P is a ring";
  EXPECT_EQ(make_topology("torus", 7).degree(), 2);
  const Topology t12 = make_topology("torus", 12, 2);
  EXPECT_EQ(t12.cols, 6);
}

TEST(GossipTopology, BadNamesAndLayoutsAreClearErrors) {
  try {
    make_topology("star", 4);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'star'"), std::string::npos) << e.what();
  }
  try {
    make_topology("torus", 8, 3);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("torus_rows 3"), std::string::npos) << e.what();
  }
}

TEST(GossipTopology, NeighbourExchangeDeliversEachNeighboursTensor) {
  for (const std::string name : {"ring", "torus", "exponential"}) {
    const int p = 6;
    const Topology t = make_topology(name, p);
    auto got = testing::on_ranks(p, [&](Communicator& comm) {
      const auto mine = torch::full({3}, static_cast<float>(comm.rank()));
      return exchange_with_neighbours(t, mine, comm, 5);
    });
    for (int r = 0; r < p; ++r) {
      std::set<int> senders;
      for (const auto& x : got[static_cast<size_t>(r)])
        senders.insert(static_cast<int>(x[0].item<float>()));
      EXPECT_EQ(senders, neighbours_by_definition(name, p, r, t.rows)) << name << " rank " << r;
    }
  }
}

// The reusing form fills the same buffers again on the next exchange (no fresh allocation) with
// the new step's tensors.
TEST(GossipTopology, NeighbourExchangeIntoReusedBuffers) {
  const int p = 4;
  const Topology t = make_topology("ring", p);
  testing::on_ranks(p, [&](Communicator& comm) {
    std::vector<at::Tensor> received;
    std::vector<const void*> first;
    for (int step = 0; step < 2; ++step) {
      const auto mine = torch::full({5}, static_cast<float>(10 * step + comm.rank()));
      exchange_with_neighbours(t, mine, comm, 5, received);
      std::set<int> senders;
      for (const auto& x : received) {
        senders.insert(static_cast<int>(x[4].item<float>()) - 10 * step);
        if (step == 0) first.push_back(x.data_ptr());
      }
      EXPECT_EQ(senders, neighbours_by_definition("ring", p, comm.rank(), 0));
    }
    for (size_t k = 0; k < received.size(); ++k)
      EXPECT_EQ(received[k].data_ptr(), first[k]) << "exchange " << k << " reused its buffer";
    return 0;
  });
}

// mix_uniform_minus_mine gives, bit for bit, mix_uniform(mine, received) - mine: on fp32 CPU
// tensors in its one pass (1 to 3 neighbours, several chunks and a partial one, a reused output),
// and on fp64 through the tensor operations.
TEST(GossipTopology, MixMinusMineIsTheTensorExpressionBitForBit) {
  for (int degree = 1; degree <= 3; ++degree) {
    Topology t = make_topology("ring", 2);
    t.exchanges.resize(static_cast<size_t>(degree), t.exchanges[0]);
    ASSERT_EQ(t.degree(), degree);
    at::Tensor out;
    for (int64_t n : {int64_t{3}, int64_t{3 * 4096 + 77}})
      for (at::ScalarType type : {at::kFloat, at::kDouble}) {
        at::Generator gen = make_generator(static_cast<uint64_t>(n), degree, 0);
        const at::Tensor mine = at::randn({n}, gen).to(type);
        std::vector<at::Tensor> received;
        for (int k = 0; k < degree; ++k) received.push_back(at::randn({n}, gen).to(type) * 3);
        mix_uniform_minus_mine(t, mine, received, out);
        EXPECT_TRUE(same_bits(out, mix_uniform(t, mine, received).sub_(mine)))
            << "degree " << degree << ", " << n << " elements, " << c10::toString(type);
      }
  }
}

}  // namespace
}  // namespace cedar
