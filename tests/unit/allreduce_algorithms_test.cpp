// Allreduce schemes over point-to-point messages on in-process ranks: results in each scheme's
// own summation order and within fp32 rounding of the sum, the bytes and messages each rank sends
// against the schemes' formulas (tests/unit/allreduce_checks.h), emulated messages, the scheme of
// sub-communicators, bad node sizes, and the cost model's terms.
#include "comm/allreduce_algorithms.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <string>
#include <tuple>

#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "comm/network_model.h"
#include "tests/unit/allreduce_checks.h"

namespace cedar {
namespace {

using testing::check_allreduce_scheme;
using testing::reference_sum;
using testing::scheme_input;

// Counts below P (empty chunks), divisible by every P here but 8 (60), by 2, 4 and 8 (64), and by
// none (1001).
const std::vector<int64_t> kCounts = {1, 3, 7, 60, 64, 1001};

class FlatSchemes : public ::testing::TestWithParam<std::tuple<AllreduceScheme, int>> {};

TEST_P(FlatSchemes, SumInTheSchemesOrderAndSendTheirFormulasBytes) {
  const auto [scheme, p] = GetParam();
  for (int64_t n : kCounts)
    run_ranks(
        p, [&, scheme = scheme](Communicator& inner) { check_allreduce_scheme(inner, scheme, n); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, FlatSchemes,
                         ::testing::Combine(::testing::Values(AllreduceScheme::ring,
                                                              AllreduceScheme::halving_doubling,
                                                              AllreduceScheme::tree),
                                            ::testing::Values(2, 3, 4, 5, 8)),
                         [](const auto& info) {
                           return allreduce_scheme_name(std::get<0>(info.param)) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

class TwoLevel : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(TwoLevel, TreeInsideNodesRingAmongLeaders) {
  const auto [p, per_node] = GetParam();
  for (int64_t n : kCounts)
    run_ranks(p, [&, per_node = per_node](Communicator& inner) {
      check_allreduce_scheme(inner, AllreduceScheme::two_level, n, per_node);
    });
}

// (ranks, ranks per node): one node, one rank per node, and nodes of 2, 3 and 4.
INSTANTIATE_TEST_SUITE_P(Nodes, TwoLevel,
                         ::testing::Values(std::make_tuple(2, 2), std::make_tuple(3, 1),
                                           std::make_tuple(4, 2), std::make_tuple(5, 5),
                                           std::make_tuple(6, 3), std::make_tuple(8, 2),
                                           std::make_tuple(8, 4)));

// The reference orders are not the plain left-to-right sum: a check against them could fail.
TEST(AllreduceReference, OrdersDifferFromTheSumRankByRank) {
  std::vector<at::Tensor> x;
  for (int r = 0; r < 5; ++r) x.push_back(scheme_input(r, 1001));
  at::Tensor plain = x[0].clone();
  for (int r = 1; r < 5; ++r) plain = plain + x[r];
  for (auto scheme : {AllreduceScheme::ring, AllreduceScheme::halving_doubling,
                      AllreduceScheme::tree, AllreduceScheme::two_level})
    EXPECT_FALSE(at::equal(reference_sum(scheme, x, 1), plain)) << allreduce_scheme_name(scheme);
}

TEST(AllreduceSchemes, IntegersAndDoublesSumExactly) {
  for (auto scheme :
       {AllreduceScheme::ring, AllreduceScheme::halving_doubling, AllreduceScheme::tree})
    run_ranks(5, [scheme](Communicator& inner) {
      MeteredCommunicator comm(inner);
      comm.use_allreduce(scheme);
      auto l = torch::arange(0, 11, torch::kLong) * (comm.rank() + 1);
      comm.allreduce_sum(l);
      EXPECT_TRUE(torch::equal(l, torch::arange(0, 11, torch::kLong) * 15));
      auto d = torch::full({2, 3}, 0.5 * comm.rank(), torch::kDouble);
      comm.allreduce_sum(d);
      EXPECT_TRUE(torch::equal(d, torch::full({2, 3}, 5.0, torch::kDouble)));
    });
}

TEST(AllreduceSchemes, EveryMessageLastsItsModeledTimeWhenEmulating) {
  // alpha 2 ms: a ring on 4 ranks sends 6 messages, so no rank finishes in under 12 ms.
  const NetworkProfile slow{"slow", 2e-3, 0};
  run_ranks(4, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    comm.use_allreduce(AllreduceScheme::ring);
    comm.emulate(&slow);
    auto t = torch::ones({8});
    comm.allreduce_sum(t);
    EXPECT_GE(comm.totals().at("allreduce").seconds, 12e-3);
    EXPECT_TRUE(torch::equal(t, torch::full({8}, 4.0f)));
  });
}

TEST(AllreduceSchemes, SubCommunicatorsRunTheSchemeOfTheirLevel) {
  run_ranks(4, [](Communicator& inner) {
    MeteredCommunicator comm(inner);
    comm.use_allreduce(AllreduceScheme::two_level, 2);
    auto intra = comm.split(comm.rank() / 2, comm.rank(), "intra");
    auto inter = comm.split(comm.rank() % 2, comm.rank(), "inter");
    EXPECT_EQ(dynamic_cast<MeteredCommunicator&>(*intra).allreduce_scheme(), AllreduceScheme::tree);
    EXPECT_EQ(dynamic_cast<MeteredCommunicator&>(*inter).allreduce_scheme(), AllreduceScheme::ring);
    auto t = torch::full({3}, float(comm.rank()));
    intra->allreduce_sum(t);
    EXPECT_TRUE(torch::equal(t, torch::full({3}, comm.rank() < 2 ? 1.0f : 5.0f)));
    // A tree on 2 ranks: the leaf sends up, the root sends down; 12 bytes each.
    EXPECT_EQ(comm.totals().at("intra/allreduce").bus_bytes, 12);
    EXPECT_EQ(comm.totals().at("intra/allreduce").latency_steps, 1);
  });
}

TEST(AllreduceSchemes, TwoLevelNodesMustDivideTheRanks) {
  run_ranks(4, [](Communicator& inner) {
    MeteredCommunicator comm(inner);
    try {
      comm.use_allreduce(AllreduceScheme::two_level, 3);
      ADD_FAILURE() << "nodes of 3 ranks accepted on 4 ranks";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("3 ranks per node"), std::string::npos) << e.what();
    }
  });
}

TEST(AllreduceCosts, TermsOfEachScheme) {
  const double s = 1000;
  // Ring: 2(P-1) steps, 2(P-1)/P of the bytes.
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::ring, 5, s).latency_steps, 8);
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::ring, 5, s).bus_bytes, 1600);
  // Halving-doubling: 2 log2 P; on 6 ranks, 2 log2 4 plus the extra ranks' step in and out.
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::halving_doubling, 8, s).latency_steps, 6);
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::halving_doubling, 8, s).bus_bytes, 1750);
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::halving_doubling, 6, s).latency_steps, 6);
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::halving_doubling, 6, s).bus_bytes, 3500);
  // Binary tree, one message per link at a time: P = 3 (root takes two children in turn) ... 8.
  const std::vector<int64_t> steps = {0, 0, 2, 4, 4, 6, 6, 8, 8};
  for (int p = 1; p <= 8; ++p) EXPECT_EQ(binary_tree_allreduce_steps(p), steps[p]) << p;
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::tree, 5, s).bus_bytes, 6000);
  const TwoLevelTerms two = two_level_allreduce_terms(8, 4, s);
  EXPECT_DOUBLE_EQ(two.intra.latency_steps, 4);
  EXPECT_DOUBLE_EQ(two.inter.latency_steps, 2);
  EXPECT_DOUBLE_EQ(two.inter.bus_bytes, 1000);
  EXPECT_THROW(two_level_allreduce_terms(8, 3, s), std::invalid_argument);
  EXPECT_THROW(allreduce_terms(AllreduceScheme::two_level, 8, s), std::invalid_argument);
  EXPECT_DOUBLE_EQ(allreduce_terms(AllreduceScheme::tree, 1, s).bus_bytes, 0);
}

// Where every rank sends the same, the cost model's terms are what the metering layer counts.
TEST(AllreduceCosts, RingAndHalvingDoublingTermsAreTheMeteredCounts) {
  for (auto scheme : {AllreduceScheme::ring, AllreduceScheme::halving_doubling})
    for (int p : {2, 4, 8})
      run_ranks(p, [scheme, p](Communicator& inner) {
        MeteredCommunicator comm(inner);
        comm.use_allreduce(scheme);
        auto t = torch::ones({64});
        comm.allreduce_sum(t);
        const AllreduceTerms terms = allreduce_terms(scheme, p, 256);
        EXPECT_DOUBLE_EQ(double(comm.step().latency_steps), terms.latency_steps);
        EXPECT_DOUBLE_EQ(double(comm.step().bus_bytes), terms.bus_bytes);
      });
}

TEST(AllreduceCosts, SchemeNamesParseAndUnknownOnesAreNamed) {
  for (const auto& name : allreduce_scheme_names())
    EXPECT_EQ(allreduce_scheme_name(parse_allreduce_scheme(name)), name);
  try {
    parse_allreduce_scheme("butterfly");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'butterfly'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("halving_doubling"), std::string::npos);
  }
}

}  // namespace
}  // namespace cedar
