// Accordion (Agarwal et al., MLSys 2021): the critical-regime detector against hand-computed
// gradient norms (the paper's inequality, its first detection, the detection interval, an lr
// decay), the bytes of both PowerSGD levels from the format, equality with plain PowerSGD and
// top-k in a fixed regime (the error memory handed over on a switch), ranks agreeing, resuming
// from the saved state bit for bit, and top-k at ratio 1 on both levels being dense.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <iterator>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::make_algorithm;
using testing::randn_seeded;
using testing::reduce_once;
using testing::same_bits;
using testing::StepOptions;

// One epoch per step, the learning rate dropping tenfold at `decay_step` (-1: never).
StepOptions epoch_per_step(int64_t decay_step = -1) {
  StepOptions o;
  o.lr_schedule = [decay_step](int64_t t) {
    return decay_step >= 0 && t >= decay_step ? 0.01 : 0.1;
  };
  o.configure = [](StepContext& ctx) {
    ctx.epoch = ctx.step;
    ctx.steps_per_epoch = 1;
  };
  return o;
}

// A 16 x 16 gradient of all `c`, whose norm is exactly 16c: the detector sees norms 16·c_t.
std::vector<double> critical_fractions(const std::string& yaml, const std::vector<double>& c,
                                       const StepOptions& options,
                                       std::vector<int64_t>* bytes = nullptr) {
  auto grads_of = [&](int, int64_t t) {
    return std::vector<at::Tensor>{torch::full({16, 16}, c[size_t(t)])};
  };
  auto res = testing::run_steps(2, "accordion", yaml, int(c.size()), grads_of, options);
  std::vector<double> out;
  for (const auto& step : res[0]) {
    out.push_back(step.stats.at("accordion.critical"));
    if (bytes) bytes->push_back(step.comm.payload_bytes);
  }
  return out;
}

TEST(AccordionDetector, CriticalExactlyWhenTheRelativeNormChangeReachesEta) {
  // Interval 1: the regime of epoch t+1 is decided at the end of epoch t from
  // |c_{t-1} - c_t| / c_{t-1} >= 0.5 (epochs 0 and 1: critical before and at the first
  // detection). c: 4, 3 (0.25), 1.5 (exactly 0.5), 1 (1/3), 1.6 (0.6, a rise), 1 (0.375), 1 (0).
  const std::vector<double> c = {4, 3, 1.5, 1, 1.6, 1, 1, 1};
  std::vector<int64_t> bytes;
  EXPECT_EQ(critical_fractions("{eta: 0.5, interval: 1}", c, epoch_per_step(), &bytes),
            (std::vector<double>{1, 1, 0, 1, 0, 1, 0, 0}));
  // PowerSGD on 16 x 16: P and Q of 16·r fp32 each, r = 2 critical, 1 otherwise; from epoch 1
  // the detection broadcasts one fp64 norm per layer.
  const std::vector<int64_t> expected = {256,     256 + 8, 128 + 8, 256 + 8,
                                         128 + 8, 256 + 8, 128 + 8, 128 + 8};
  EXPECT_EQ(bytes, expected);
}

TEST(AccordionDetector, AnLrDecayMakesEveryLayerCritical) {
  const std::vector<double> c = {4, 3, 1.5, 1, 1.6, 1, 1, 1};
  // The lr of epoch 6 is below epoch 5's: epoch 6 is critical although 1 -> 1 changes nothing.
  EXPECT_EQ(critical_fractions("{eta: 0.5, interval: 1}", c, epoch_per_step(6)),
            (std::vector<double>{1, 1, 0, 1, 0, 1, 1, 0}));
}

TEST(AccordionDetector, DetectsEveryIntervalEpochsAgainstTheLastDetection) {
  // Interval 2: detections at the ends of epochs 0, 2, 4 compare c_2 with c_0 (0.5: critical for
  // epochs 3, 4) and c_4 with c_2 (0.4: not, epochs 5, 6); odd epochs' norms are never read.
  const std::vector<double> c = {4, 100, 2, 100, 1.2, 100, 100};
  EXPECT_EQ(critical_fractions("{eta: 0.5, interval: 2}", c, epoch_per_step()),
            (std::vector<double>{1, 1, 1, 1, 1, 0, 0}));
}

at::Tensor grad_at(int64_t t) { return randn_seeded(16 * 24, 40 + t).view({16, 24}); }

// Norms 4, 3, 1.4, 1, 1.6, 1, 1 times a fixed direction's (plus a little noise): relative changes
// 0.25, 0.53, 0.29, 0.6, 0.375, so that with eta 0.5 and interval 1 the layer is critical in epochs
// 0, 1, 3 and 5.
const double kScales[] = {4, 3, 1.4, 1, 1.6, 1, 1};
at::Tensor switching_grad_at(int64_t t) {
  return randn_seeded(16 * 24, 40).view({16, 24}) * kScales[t] +
         1e-3 * randn_seeded(16 * 24, 60 + t).view({16, 24});
}

// Accordion with `yaml` against plain `name` instances at the levels `low_yaml` and `high_yaml`,
// used in the epochs given by `critical`: on every switch the layer's error memory moves from the
// instance that held it to the other, and its Q is dropped (the receiver draws a fresh one), as
// in the reference, whose switch builds a new reducer and keeps the memory.
void expect_switching_levels(const std::string& yaml, const std::string& name,
                             const std::string& low_yaml, const std::string& high_yaml,
                             const std::vector<bool>& critical,
                             at::Tensor (*grad)(int64_t) = switching_grad_at) {
  auto accordion = make_algorithm("accordion", yaml);
  std::unique_ptr<Algorithm> levels[2] = {make_algorithm(name, low_yaml),
                                          make_algorithm(name, high_yaml)};
  const StepOptions o = epoch_per_step();
  for (int64_t t = 0; t < int64_t(critical.size()); ++t) {
    const int now = critical[size_t(t)] ? 0 : 1;
    if (t > 0 && critical[size_t(t)] != critical[size_t(t - 1)]) {
      AlgorithmState from, to;
      levels[1 - now]->save_state(from);
      levels[now]->save_state(to);
      AlgorithmState kept, moved;
      for (const auto& kv : from)
        (kv.first.rfind("error.", 0) == 0 || kv.first.rfind("memory.", 0) == 0 ? moved : kept)
            .insert(kv);
      for (const auto& kv : to)
        if (kv.first.rfind("query.", 0) != 0 && !moved.count(kv.first)) moved.insert(kv);
      for (auto it = kept.begin(); it != kept.end();)
        it = it->first.rfind("query.", 0) == 0 ? kept.erase(it) : std::next(it);
      levels[1 - now]->load_state(kept);
      levels[now]->load_state(moved);
    }
    at::Tensor want = reduce_once(*levels[now], grad(t), t, o);
    EXPECT_TRUE(same_bits(reduce_once(*accordion, grad(t), t, o), want)) << "step " << t;
  }
}

TEST(AccordionAlgorithm, FixedRegimesArePlainPowerSgdBitForBit) {
  // eta beyond any relative change: critical for epochs 0 and 1, then rank 1 for good.
  expect_switching_levels("{rank_low: 3, rank_high: 1, eta: 1000, interval: 1}", "powersgd",
                          "{rank: 3}", "{rank: 1}", {true, true, false, false, false, false},
                          grad_at);
}

TEST(AccordionAlgorithm, FixedRegimesArePlainTopKBitForBit) {
  expect_switching_levels(
      "{compressor: topk, ratio_low: 0.5, ratio_high: 0.05, eta: 1000, "
      "interval: 1}",
      "topk", "{ratio: 0.5}", "{ratio: 0.05}", {true, true, false, false, false, false}, grad_at);
}

TEST(AccordionAlgorithm, SwitchingBackAndForthIsPlainPowerSgdWithTheMemoryHandedOver) {
  const std::vector<bool> critical = {true, true, false, true, false, true, false};
  expect_switching_levels("{rank_low: 3, rank_high: 1, eta: 0.5, interval: 1}", "powersgd",
                          "{rank: 3}", "{rank: 1}", critical);
  expect_switching_levels(
      "{compressor: topk, ratio_low: 0.5, ratio_high: 0.05, eta: 0.5, "
      "interval: 1}",
      "topk", "{ratio: 0.5}", "{ratio: 0.05}", critical);
}

// Top-k's memory moved between the levels while the lr changes every step (a warm-up, which is no
// decay): the paper's rule in units of the step, m <- m + η·g - top_k(m + η·g) with the level's
// k, whose update is top_k(...)/η, holds across the switches.
TEST(AccordionAlgorithm, TopKSwitchesKeepThePaperMemoryWhileTheLrChanges) {
  StepOptions o = epoch_per_step();
  o.lr_schedule = [](int64_t t) { return 0.01 * double(1 + t); };
  auto accordion = make_algorithm(
      "accordion", "{compressor: topk, ratio_low: 0.5, ratio_high: 0.05, eta: 0.5, interval: 1}");
  const std::vector<bool> critical = {true, true, false, true, false, true, false};
  const int64_t d = 16 * 24;
  at::Tensor m = torch::zeros({d});
  for (int64_t t = 0; t < int64_t(critical.size()); ++t) {
    const double lr = o.lr_at(t);
    at::Tensor p = m + lr * switching_grad_at(t).reshape({-1});
    const at::Tensor s = testing::topk_dense(p, critical[size_t(t)] ? d / 2 : (d + 19) / 20);
    m = p - s;
    EXPECT_TRUE(torch::allclose(reduce_once(*accordion, switching_grad_at(t), t, o).reshape({-1}),
                                s / lr, 1e-5, 1e-6))
        << "step " << t;
  }
}

TEST(AccordionAlgorithm, AlwaysCriticalIsPlainPowerSgdOnTwoRanks) {
  auto grads_of = [](int r, int64_t t) {
    return std::vector<at::Tensor>{randn_seeded(16 * 24, 10 * t + r).view({16, 24}),
                                   randn_seeded(7, 100 + 10 * t + r)};
  };
  auto a = testing::run_steps(2, "accordion", "{rank_low: 2}", 4, grads_of);
  auto p = testing::run_steps(2, "powersgd", "{rank: 2}", 4, grads_of);
  for (int r = 0; r < 2; ++r)
    for (int64_t t = 0; t < 4; ++t)
      for (size_t i = 0; i < 2; ++i)
        EXPECT_TRUE(same_bits(a[r][size_t(t)].grads[i], p[r][size_t(t)].grads[i]));
}

TEST(AccordionRanks, AgreeWhileTheirLocalNormsDiffer) {
  // Rank 1's gradients are 3x rank 0's plus noise: the decisions are rank 0's, broadcast.
  auto grads_of = [](int r, int64_t t) {
    const double c[] = {4, 3, 1.5, 1, 1.6, 1};
    return std::vector<at::Tensor>{
        torch::full({16, 16}, c[t] * (1 + 2 * r)) + randn_seeded(256, 7 * t + r).view({16, 16}),
        randn_seeded(9, 50 + t + r)};
  };
  for (const char* yaml : {"{eta: 0.5, interval: 1}", "{compressor: topk, eta: 0.5, interval: 1}"})
    testing::expect_ranks_agree(
        testing::run_steps(2, "accordion", yaml, 6, grads_of, epoch_per_step(4)));
}

TEST(AccordionCheckpoint, ResumingIsBitwiseTheUninterruptedRun) {
  for (const char* yaml : {"{eta: 0.2, interval: 1}",
                           "{compressor: topk, ratio_low: 0.5, "
                           "ratio_high: 0.1, eta: 0.2, interval: 1}"}) {
    const StepOptions o = epoch_per_step(3);
    auto whole = make_algorithm("accordion", yaml);
    std::vector<at::Tensor> want;
    for (int64_t t = 0; t < 6; ++t) want.push_back(reduce_once(*whole, grad_at(t), t, o));
    for (int64_t stop = 1; stop < 6; ++stop) {
      auto first = make_algorithm("accordion", yaml);
      for (int64_t t = 0; t < stop; ++t) reduce_once(*first, grad_at(t), t, o);
      AlgorithmState state;
      first->save_state(state);
      auto resumed = make_algorithm("accordion", yaml);
      resumed->load_state(state);
      for (int64_t t = stop; t < 6; ++t)
        EXPECT_TRUE(same_bits(reduce_once(*resumed, grad_at(t), t, o), want[size_t(t)]))
            << yaml << " stopped at " << stop << ", step " << t;
    }
  }
}

TEST(AccordionAlgorithm, TopKAtRatioOneOnBothLevelsIsTopKAtRatioOne) {
  auto grads_of = [](int r, int64_t t) {
    return std::vector<at::Tensor>{randn_seeded(24, 10 * t + r).view({4, 6}),
                                   randn_seeded(5, 100 + 10 * t + r)};
  };
  auto a = testing::run_steps(2, "accordion",
                              "{compressor: topk, ratio_low: 1, ratio_high: 1, eta: 0.1, "
                              "interval: 1}",
                              5, grads_of, epoch_per_step(3));
  auto dense = testing::run_steps(2, "topk", "{ratio: 1}", 5, grads_of, epoch_per_step(3));
  for (int64_t t = 0; t < 5; ++t)
    for (size_t i = 0; i < 2; ++i)
      EXPECT_TRUE(same_bits(a[0][size_t(t)].grads[i], dense[0][size_t(t)].grads[i]));
}

TEST(AccordionParams, RejectsBadValues) {
  EXPECT_THROW(make_algorithm("accordion", "{compressor: qsgd}"), ConfigError);
  EXPECT_THROW(make_algorithm("accordion", "{ratio_low: 0}"), ConfigError);
  EXPECT_THROW(make_algorithm("accordion", "{rank_high: 0}"), ConfigError);
  EXPECT_THROW(make_algorithm("accordion", "{interval: 0}"), ConfigError);
  EXPECT_THROW(make_algorithm("accordion", "{eta: 0}"), ConfigError);
}

}  // namespace
}  // namespace cedar
