// Findings tested over seeds: the verdict is read off the 95% confidence interval of the gap
// (paired by seed, or Welch's), and a noisier arm can no longer pass what a quieter one fails.
// Expected intervals use R's qt(0.975, df) (tests/unit/confidence_interval_test.cpp) and
// standard errors computed by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "config/params.h"
#include "reports/claims.h"

namespace cedar {
namespace {

constexpr double kT975df2 = 4.30265272974946, kT975df4 = 2.77644510519779;  // R: qt(0.975, df)

std::string write(const std::string& name, const std::string& text) {
  auto p = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(p) << text;
  return p.string();
}

RunResult seed_run(const std::string& name, const std::string& algorithm, int64_t seed, double acc,
                   double wall = 1) {
  RunResult r;
  r.id = seed;
  r.suite = "s";
  r.name = name;
  r.algorithm = algorithm;
  r.model = "resnet20";
  r.dataset = "cifar10";
  r.status = "completed";
  r.world_size = 4;
  r.seed = seed;
  r.final_accuracy = r.best_accuracy = acc;
  r.wall_seconds = wall;
  return r;
}

// DGC's accuracy gap against dense (seeds 1-3 at 92.0, 92.2, 91.8%) for DGC's three seeds.
ClaimVerdict gap_verdict(double a, double b, double c, const std::string& bounds = "at_least: -1.0",
                         std::vector<int64_t> dgc_seeds = {1, 2, 3}) {
  auto path = write("gap.yaml",
                    "claims:\n  - {text: t, source: s, kind: finding, run: dgc, "
                    "metric: accuracy_gap, " +
                        bounds + "}\n");
  std::vector<RunResult> runs = {seed_run("dense", "dense", 1, 0.920),
                                 seed_run("dense", "dense", 2, 0.922),
                                 seed_run("dense", "dense", 3, 0.918)};
  const double acc[] = {a, b, c};
  for (size_t i = 0; i < dgc_seeds.size(); ++i)
    runs.push_back(seed_run("dgc", "dgc", dgc_seeds[i], acc[i]));
  return evaluate_claims(load_claims(path), compare_runs(runs))[0];
}

// A noisier arm must not turn a failing verdict into a pass. Both DGC arms below have the same
// mean gap, -1.4 points against a claimed ≥ -1: the quiet one (gaps -1.4, -1.45, -1.35) fails
// the claim; the noisy one (gaps -3.4, +0.4, -1.2) cannot say more than the quiet one, so it may
// be inconclusive but never reproduced. (With seed_tolerance: 1 the noisy arm's bound widened to
// -1 - 100·hypot(0.02, 0.002) = -3.01 and it read "reproduced".)
TEST(ClaimVerdicts, ANoisierArmCannotTurnAFailIntoAPass) {
  const ClaimVerdict quiet = gap_verdict(0.906, 0.9075, 0.9045),
                     noisy = gap_verdict(0.886, 0.926, 0.906);
  EXPECT_NEAR(*quiet.measured, -1.4, 1e-9);
  EXPECT_NEAR(*noisy.measured, -1.4, 1e-9);
  EXPECT_EQ(quiet.verdict, "not reproduced");
  EXPECT_NE(noisy.verdict, "reproduced");
}

// Paired gaps d_i = dgc_i − dense_i, df = 2, half-width 4.30265272974946 · s_d / √3.
TEST(ClaimVerdicts, InsideOutsideAndStraddlingTheClaimedRegion) {
  // d = -0.3, -0.2, -0.1: mean -0.2, s_d = 0.1: [-0.4484, 0.0484], inside ≥ -1.
  ClaimVerdict inside = gap_verdict(0.917, 0.920, 0.917);
  EXPECT_EQ(inside.verdict, "reproduced");
  EXPECT_TRUE(inside.paired);
  EXPECT_NEAR(*inside.margin, kT975df2 * 0.1 / std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(*inside.low, -0.2 - kT975df2 * 0.1 / std::sqrt(3.0), 1e-9);
  // d = -1.4, -1.45, -1.35: mean -1.4, s_d = 0.05: [-1.5242, -1.2758], entirely below -1.
  ClaimVerdict outside = gap_verdict(0.906, 0.9075, 0.9045);
  EXPECT_EQ(outside.verdict, "not reproduced");
  EXPECT_NEAR(*outside.high, -1.4 + kT975df2 * 0.05 / std::sqrt(3.0), 1e-9);
  // d = -3.4, 0.4, -1.2: mean -1.4, s_d² = (4 + 3.24 + 0.04) / 2 = 3.64: ±4.7394, straddles -1.
  ClaimVerdict straddling = gap_verdict(0.886, 0.926, 0.906);
  EXPECT_EQ(straddling.verdict, "inconclusive");
  EXPECT_NEAR(*straddling.margin, kT975df2 * std::sqrt(3.64 / 3), 1e-9);
  // A two-sided region: the same interval [-0.4484, 0.0484] inside [-0.5, 0.5], outside
  // [0.1, 1], across [-0.4, 0.4].
  EXPECT_EQ(gap_verdict(0.917, 0.920, 0.917, "at_least: -0.5, at_most: 0.5").verdict, "reproduced");
  EXPECT_EQ(gap_verdict(0.917, 0.920, 0.917, "at_least: 0.1, at_most: 1").verdict,
            "not reproduced");
  EXPECT_EQ(gap_verdict(0.917, 0.920, 0.917, "at_least: -0.4, at_most: 0.4").verdict,
            "inconclusive");
  // at_most alone: -1.4 ± 0.1242 lies entirely below -1.
  EXPECT_EQ(gap_verdict(0.906, 0.9075, 0.9045, "at_most: -1.0").verdict, "reproduced");
}

// Two seeds are not a test, however far the bound: no interval, no pass.
TEST(ClaimVerdicts, TwoSeedsAreInsufficient) {
  ClaimVerdict v = gap_verdict(0.920, 0.922, 0, "at_least: -50", {1, 2});
  EXPECT_EQ(v.verdict, "insufficient seeds");
  EXPECT_EQ(v.seeds, 2);
  EXPECT_EQ(v.baseline_seeds, 3);
  EXPECT_FALSE(v.low);
  EXPECT_NEAR(*v.measured, 100 * (0.921 - 0.920), 1e-9);
}

// Arms that ran different seeds do not pair: Welch's t. DGC seeds 4, 5, 6 at 10, 13, 10% (mean 11,
// s² = 3) against dense seeds 1-5 at 7, 8, 9, 10, 11% (mean 9, s² = 2.5): se² = 3/3 + 2.5/5 = 1.5,
// ν = 1.5² / (1²/2 + 0.5²/4) = 4, so 2 ± 2.77644510519779 · √1.5 = 2 ± 3.4004.
TEST(ClaimVerdicts, UnpairedSeedsUseWelch) {
  auto path = write("welch.yaml",
                    "claims:\n  - {kind: finding, run: dgc, metric: accuracy_gap, at_least: -1}\n");
  std::vector<RunResult> runs;
  for (int s = 1; s <= 5; ++s) runs.push_back(seed_run("dense", "dense", s, (6 + s) / 100.0));
  runs.push_back(seed_run("dgc", "dgc", 4, 0.10));
  runs.push_back(seed_run("dgc", "dgc", 5, 0.13));
  runs.push_back(seed_run("dgc", "dgc", 6, 0.10));
  ClaimVerdict v = evaluate_claims(load_claims(path), compare_runs(runs))[0];
  EXPECT_FALSE(v.paired);
  EXPECT_NEAR(*v.measured, 2, 1e-9);
  EXPECT_NEAR(*v.margin, kT975df4 * std::sqrt(1.5), 1e-9);
  EXPECT_EQ(v.verdict, "inconclusive");  // [-1.4004, 5.4004] holds -1
  EXPECT_NE(render_claims_markdown({v}).find("| 3 vs 5, Welch | 2 | [-1.4, 5.4] | ±3.4 |"),
            std::string::npos)
      << render_claims_markdown({v});
}

// Metric accuracy: the one-sample interval of the mean. 91, 92, 93%: 92 ± 4.30265 · 1/√3
// = 92 ± 2.4841, i.e. [89.516, 94.484].
TEST(ClaimVerdicts, AccuracyIsAOneSampleInterval) {
  auto path = write("acc.yaml", R"(claims:
  - {kind: finding, run: dgc, metric: accuracy, at_least: 89}
  - {kind: finding, run: dgc, metric: accuracy, at_least: 90}
  - {kind: finding, run: dgc, metric: accuracy, at_least: 95}
)");
  auto v = evaluate_claims(load_claims(path), compare_runs({seed_run("dgc", "dgc", 1, 0.91),
                                                            seed_run("dgc", "dgc", 2, 0.92),
                                                            seed_run("dgc", "dgc", 3, 0.93)}));
  EXPECT_NEAR(*v[0].low, 92 - kT975df2 / std::sqrt(3.0), 1e-9);
  EXPECT_EQ(v[0].verdict, "reproduced");
  EXPECT_EQ(v[1].verdict, "inconclusive");
  EXPECT_EQ(v[2].verdict, "not reproduced");
  EXPECT_EQ(v[0].baseline_seeds, 0);
}

// Step speed-up against a named baseline: median step seconds, not wall-clock. FIFO's steps take
// 0.3, 0.33, 0.363 s and priority's 0.2, 0.22, 0.242 s (walls equal): 1.5 within the same factor
// as above, ×/÷ exp(2.77644510519779 · ln 1.1 · √(2/3)).
TEST(ClaimVerdicts, StepSpeedupComparesMedianStepsNotWalls) {
  auto path = write("step.yaml", R"(claims:
  - {kind: finding, run: priority, baseline: fifo, metric: step_speedup, at_least: 1.2}
  - {kind: finding, run: priority, baseline: fifo, metric: wall_speedup, at_least: 1.2}
)");
  std::vector<RunResult> runs;
  const double steps[] = {0.3, 0.33, 0.363};
  for (int s = 1; s <= 3; ++s) {
    runs.push_back(seed_run("fifo", "dense", s, 0.9, 100));
    runs.back().median_step_seconds = steps[s - 1];
    runs.push_back(seed_run("priority", "dense", s, 0.9, 100));
    runs.back().median_step_seconds = steps[s - 1] / 1.5;
  }
  auto v = evaluate_claims(load_claims(path), compare_runs(runs));
  const double factor = std::exp(kT975df4 * std::log(1.1) * std::sqrt(2.0 / 3.0));
  EXPECT_NEAR(*v[0].measured, 1.5, 1e-9);
  EXPECT_NEAR(*v[0].margin, factor, 1e-9);
  EXPECT_EQ(v[0].verdict, "reproduced");  // [1.21, 1.86] ≥ 1.2
  EXPECT_NEAR(*v[1].measured, 1.0, 1e-9);
  EXPECT_EQ(v[1].verdict, "not reproduced");
}

// Wall-clock speed-up over repeated runs: Welch's t on log times (times never pair).
// Dense walls 100, 110, 121 s and DGC's 50, 55, 60.5 s: the logs differ by ln 2 in mean, each arm's
// log variance is (ln 1.1)², so se = ln 1.1 · √(2/3) and ν = 4 (equal sizes and variances);
// the geometric-mean speed-up is 2 within ×/÷ exp(2.77644510519779 · se) = ×/÷1.2412.
TEST(ClaimVerdicts, SpeedupIsAnIntervalOfTheLogRatio) {
  auto path = write("speed.yaml", R"(claims:
  - {kind: finding, run: dgc, metric: wall_speedup, at_least: 1.5}
  - {kind: finding, run: dgc, metric: wall_speedup, at_least: 2.2}
)");
  std::vector<RunResult> runs;
  const double walls[] = {100, 110, 121};
  for (int s = 1; s <= 3; ++s) {
    runs.push_back(seed_run("dense", "dense", s, 0.9, walls[s - 1]));
    runs.push_back(seed_run("dgc", "dgc", s, 0.9, walls[s - 1] / 2));
  }
  auto v = evaluate_claims(load_claims(path), compare_runs(runs));
  const double factor = std::exp(kT975df4 * std::log(1.1) * std::sqrt(2.0 / 3.0));
  EXPECT_NEAR(*v[0].measured, 2, 1e-9);
  EXPECT_NEAR(*v[0].margin, factor, 1e-9);
  EXPECT_NEAR(*v[0].low, 2 / factor, 1e-9);
  EXPECT_NEAR(*v[0].high, 2 * factor, 1e-9);
  EXPECT_FALSE(v[0].paired);
  EXPECT_EQ(v[0].verdict, "reproduced");    // [1.611, 2.482] ≥ 1.5
  EXPECT_EQ(v[1].verdict, "inconclusive");  // 2.2 inside it
  EXPECT_NE(render_claims_markdown(v).find("×/÷1.241"), std::string::npos);
}

// A negative control (a method that should not work as well, e.g. gradient dropping beside DGC):
// where method − control holds 0 the seeds cannot tell them apart, so the test could not have
// failed the method: a finding that would read reproduced reads "not discriminating", counted
// apart, and the table says why.
// Dense 92.0, 92.2, 91.8; DGC 91.7, 92.0, 91.7 (gaps -0.3, -0.2, -0.1: reproduced ≥ -1).
// Control at 91.8, 91.9, 91.6: DGC − control = -0.1, 0.1, 0.1, mean 1/30, s² = 4/300,
// half-width 4.30265272974946 · √(4/900) = 0.2868: not separated. Control at 90.0, 90.3, 90.1:
// DGC − control = 1.7, 1.7, 1.6, mean 1.6667, s² = 1/300: [1.523, 1.810], separated.
TEST(ClaimVerdicts, ANegativeControlTheSeedsCannotSeparateMakesTheFindingNotDiscriminating) {
  auto path = write("control.yaml",
                    "claims:\n  - {text: t, source: s, kind: finding, run: dgc, control: drop, "
                    "metric: accuracy_gap, at_least: -1}\n");
  auto verdict = [&](double a, double b, double c) {
    std::vector<RunResult> runs;
    const double dense[] = {0.920, 0.922, 0.918}, dgc[] = {0.917, 0.920, 0.917}, drop[] = {a, b, c};
    for (int s = 1; s <= 3; ++s) {
      runs.push_back(seed_run("dense", "dense", s, dense[s - 1]));
      runs.push_back(seed_run("dgc", "dgc", s, dgc[s - 1]));
      runs.push_back(seed_run("drop", "dgc", s, drop[s - 1]));
    }
    return evaluate_claims(load_claims(path), compare_runs(runs))[0];
  };
  ClaimVerdict close = verdict(0.918, 0.919, 0.916);
  EXPECT_EQ(close.verdict, "not discriminating");
  EXPECT_EQ(close.control_verdict, "not separated");
  EXPECT_NEAR(*close.control_high - *close.control_low, 2 * kT975df2 * std::sqrt(4.0 / 900), 1e-9);
  const std::string close_table = render_claims_markdown({close});
  EXPECT_NE(close_table.find("| not discriminating; not separated from control drop: method − "
                             "control in [-0.2535, 0.3202] |"),
            std::string::npos)
      << close_table;
  EXPECT_NE(close_table.find("Findings: 0 reproduced, 0 not reproduced, 0 inconclusive, 1 not "
                             "discriminating, 0 insufficient seeds"),
            std::string::npos)
      << close_table;
  ClaimVerdict apart = verdict(0.900, 0.903, 0.901);
  EXPECT_EQ(apart.verdict, "reproduced");
  EXPECT_EQ(apart.control_verdict, "separated");
  EXPECT_NEAR(*apart.control_low, 5.0 / 3 - kT975df2 * std::sqrt(1.0 / 900), 1e-9);
  // Two seeds of the control cannot separate anything; a missing control is named as such.
  std::vector<RunResult> runs;
  for (int s = 1; s <= 3; ++s) {
    runs.push_back(seed_run("dense", "dense", s, 0.92));
    runs.push_back(seed_run("dgc", "dgc", s, 0.91 + 0.001 * s));
    if (s < 3) runs.push_back(seed_run("drop", "dgc", s, 0.5));
  }
  EXPECT_EQ(evaluate_claims(load_claims(path), compare_runs(runs))[0].control_verdict,
            "insufficient seeds");
  runs.erase(
      std::remove_if(runs.begin(), runs.end(), [](const RunResult& r) { return r.name == "drop"; }),
      runs.end());
  ClaimVerdict missing = evaluate_claims(load_claims(path), compare_runs(runs))[0];
  EXPECT_EQ(missing.control_verdict, "not enough runs");
  EXPECT_NE(render_claims_markdown({missing}).find("; control drop: not enough runs |"),
            std::string::npos);
}

// A construction's fixed point (kind: accounting, final_gap) holds only if every seed lies in the
// claimed region: one seed below the bound fails it whatever the others' mean, and the value shown
// is that seed's. It is never a finding's interval (signSGD's gap on the sign counterexample).
TEST(ClaimVerdicts, AConstructionsGapHoldsOnEverySeed) {
  auto path = write("gap_accounting.yaml",
                    "claims:\n  - {text: t, source: s, kind: accounting, run: signsgd, "
                    "metric: final_gap, at_least: 6.0}\n");
  auto verdict = [&](std::vector<double> gaps) {
    std::vector<RunResult> runs;
    for (size_t i = 0; i < gaps.size(); ++i) {
      runs.push_back(seed_run("signsgd", "signsgd", static_cast<int64_t>(i + 1), 0));
      runs.back().final_gap = gaps[i];
    }
    return evaluate_claims(load_claims(path), compare_runs(runs))[0];
  };
  const ClaimVerdict held = verdict({6.7, 6.5, 6.9});
  EXPECT_EQ(held.verdict, "holds");
  ASSERT_TRUE(held.measured);
  EXPECT_DOUBLE_EQ(*held.measured, 6.5);
  EXPECT_FALSE(held.low);  // no interval: not a test over seeds
  EXPECT_EQ(held.seeds, 3);
  // Mean 6.6 >= 6, but one seed at 5.9.
  const ClaimVerdict failed = verdict({7.0, 5.9, 6.9});
  EXPECT_EQ(failed.verdict, "does not hold");
  EXPECT_DOUBLE_EQ(*failed.measured, 5.9);
  // Accuracy is never accounting.
  EXPECT_THROW(load_claims(write("acc_accounting.yaml",
                                 "claims:\n  - {text: t, source: s, kind: accounting, run: a, "
                                 "metric: accuracy, at_least: 6.0}\n")),
               ConfigError);
}

// A run converged to within rounding can end with f(θ) − f* slightly below zero (the loss in
// float32, f* in float64): a measurement like any other, never a missing run.
TEST(ClaimVerdicts, ANegativeGapWithinRoundingIsMeasured) {
  auto path = write("gap_negative.yaml",
                    "claims:\n  - {text: t, source: s, kind: finding, run: ef, "
                    "metric: final_gap, at_most: 0.01}\n");
  std::vector<RunResult> runs;
  const double gaps[] = {-1e-9, 1e-4, 2e-4};
  for (int i = 0; i < 3; ++i) {
    runs.push_back(seed_run("ef", "ef-signsgd", i + 1, 0));
    runs.back().final_gap = gaps[i];
  }
  const ClaimVerdict v = evaluate_claims(load_claims(path), compare_runs(runs))[0];
  EXPECT_EQ(v.verdict, "reproduced");
  ASSERT_TRUE(v.measured);
  EXPECT_NEAR(*v.measured, (gaps[0] + gaps[1] + gaps[2]) / 3, 1e-15);
}

}  // namespace
}  // namespace cedar
