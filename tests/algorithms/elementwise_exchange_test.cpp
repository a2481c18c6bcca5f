// The catalog's elementwise_exchange trait, which decides what train.schedule: priority runs
// (runner/train/exchange_schedule.h): every algorithm with it gives, on 3 in-process ranks over 3
// steps, bitwise the same update when a bucket is reduced slice by slice (cut through its
// parameters, slices in an order unlike the bucket's) as when it is reduced whole; every
// algorithm without it is refused by check_schedule_for, which names it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "config/experiment_config.h"
#include "runner/train/exchange_schedule.h"
#include "runner/train/slice_plan.h"
#include "runner/train/sliced_buckets.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::bucket_of_named_shapes;
using testing::NamedShapes;

std::vector<std::string> elementwise_algorithms() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : algorithm_catalog())
    if (a.elementwise_exchange) names.push_back(a.name);
  return names;
}

// A bucket as the trainer lays one out: a conv layer and a linear layer in reverse model order.
const NamedShapes kShapes = {
    {"fc.bias", {10}}, {"fc.weight", {10, 12}}, {"conv.bias", {4}}, {"conv.weight", {4, 3, 3, 3}}};

GradBucket seeded_bucket(int rank, int64_t step) {
  GradBucket b = bucket_of_named_shapes(kShapes, 2);
  b.flat.copy_(testing::randn_seeded(
      b.flat.numel(), 1000 * static_cast<uint64_t>(step) + static_cast<uint64_t>(rank)));
  return b;
}

class ElementwiseExchange : public ::testing::TestWithParam<std::string> {};

TEST_P(ElementwiseExchange, SlicesGiveTheWholeBucketsUpdateBitForBit) {
  const std::string name = GetParam();
  const auto flats = testing::on_ranks(3, [&](Communicator& comm) {
    auto whole = testing::make_algorithm(name), sliced = testing::make_algorithm(name);
    std::vector<NamedTensor> params;
    for (auto it = kShapes.rbegin(); it != kShapes.rend(); ++it)
      params.push_back({it->first, torch::zeros(it->second)});
    whole->setup(params, comm);
    sliced->setup(params, comm);
    std::vector<std::pair<at::Tensor, at::Tensor>> out;
    for (int64_t step = 0; step < 3; ++step) {
      StepContext ctx;
      ctx.step = step;
      ctx.seed = 9;
      ctx.lr = 0.1;
      ctx.base_lr = 0.1;
      ctx.steps_per_epoch = 100;
      ctx.first_decay_epoch = 10;  // post-local SGD: the steps before its switch exchange
      GradBucket a = seeded_bucket(comm.rank(), step), b = seeded_bucket(comm.rank(), step);
      whole->reduce_gradients(a, comm, ctx);
      // Slices of 17 values cut through every parameter; exchanged last slice first.
      std::vector<std::vector<BucketPiece>> pieces(1);
      for (size_t e = 0; e < b.entries.size(); ++e)
        pieces[0].push_back({b.entries[e].grad.numel(), static_cast<int64_t>(3 - e)});
      std::vector<Slice> slices = plan_slices(pieces, 17);
      std::reverse(slices.begin(), slices.end());
      for (const Slice& s : slices) {
        GradBucket part = slice_of(b, s);
        sliced->reduce_gradients(part, comm, ctx);
      }
      out.push_back({a.flat.clone(), b.flat.clone()});
    }
    return out;
  });
  for (size_t r = 0; r < flats.size(); ++r)
    for (size_t t = 0; t < flats[r].size(); ++t) {
      EXPECT_TRUE(testing::same_bits(flats[r][t].first, flats[r][t].second))
          << name << ": rank " << r << " step " << t << ": slices differ from the whole bucket";
      // Not vacuous: the exchange changed the gradients.
      EXPECT_FALSE(testing::same_bits(flats[r][t].first, seeded_bucket(int(r), int64_t(t)).flat))
          << name << ": step " << t << " exchanged nothing";
    }
}

INSTANTIATE_TEST_SUITE_P(Catalog, ElementwiseExchange,
                         ::testing::ValuesIn(elementwise_algorithms()),
                         testing::algorithm_test_name);

TEST(ElementwiseExchange, PriorityRunsOnlyElementwiseAlgorithmsAndNamesTheOthers) {
  EXPECT_NE(find_algorithm("dense").elementwise_exchange, false);  // the rule admits dense SGD
  for (const AlgorithmInfo& a : algorithm_catalog()) {
    ExperimentConfig cfg;
    cfg.source.file = "run.yaml";
    cfg.algorithm = a.name;
    cfg.train.overlap = true;
    EXPECT_NO_THROW(check_schedule_for(cfg)) << a.name << ": fifo is for every algorithm";
    cfg.train.schedule = "priority";
    if (a.elementwise_exchange) {
      EXPECT_NO_THROW(check_schedule_for(cfg)) << a.name;
      continue;
    }
    try {
      check_schedule_for(cfg);
      ADD_FAILURE() << a.name << ": priority scheduling was accepted";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("run.yaml: train.schedule: priority"), std::string::npos) << m;
      EXPECT_NE(m.find("algorithm '" + a.name + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("priority scheduling runs dense"), std::string::npos) << m;
    }
  }
}

TEST(ElementwiseExchange, SliceSizeIsKilobytesOfFp32) {
  EXPECT_EQ(slice_elements(4000), 1000000);  // ByteScheduler's default partition
  EXPECT_EQ(slice_elements(160), 40000);     // P3's released code's slice
  EXPECT_EQ(slice_elements(0.004), 1);
  TrainConfig t;
  EXPECT_EQ(priority_slice_elements(t), 0);  // fifo: whole buckets
  t.schedule = "priority";
  EXPECT_EQ(priority_slice_elements(t), 1000000);
}

}  // namespace
}  // namespace cedar
