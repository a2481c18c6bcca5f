// `cedar network validate` (reports/link_validation.h) on databases written here through the
// store, with per-step seconds and bytes chosen by the test and profile files in the format
// `cedar network calibrate` writes; every expected median, error, share and crossover is worked
// out below from those numbers and the α–β formulas (ring allreduce at P: 2(P−1) α terms and
// 2(P−1)/P·S bus bytes; allgather of s per rank: P−1 and (P−1)·s; allgatherv twice the α terms).
#include "reports/link_validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "results/store.h"
#include "runner/suite/cluster_state.h"
#include "tests/unit/link_validation_fixture.h"

namespace cedar {
namespace {

using link_fixture::Fit;
using link_fixture::links;
using link_fixture::Op;
using link_fixture::run_spec;
using link_fixture::RunSpec;
using link_fixture::Step;
using link_fixture::write_run;

std::string fresh_db(const std::string& name) {
  return link_fixture::fresh_db(::testing::TempDir(), name);
}
std::string profile_file(const std::string& name, int hosts, int ranks_per_host,
                         const std::string& rate, int np, const std::vector<Fit>& fits) {
  return link_fixture::profile_file(::testing::TempDir(), name, hosts, ranks_per_host, rate, np,
                                    fits);
}

const double kAlphaAr = 50e-6, kBetaAr = 1e-7;       // allreduce at P = 2: 80 Mbit/s
const double kAlphaAgv = 200e-6, kBetaAgv = 1.5e-7;  // allgatherv at P = 2

std::string profile_2x1(const std::string& rate, double beta_allreduce = kBetaAr) {
  return profile_file("vc-" + rate + "-2x1", 2, 1, rate, 2,
                      {{"allreduce", 2, {kAlphaAr, beta_allreduce}},
                       {"allgather", 2, {100e-6, 1.2e-7}},
                       {"allgatherv", 2, {kAlphaAgv, kBetaAgv}},
                       {"sendrecv", 2, {30e-6, 0.9e-7}}});
}

const LinkValidationRow& row(const LinkValidation& v, const std::string& name) {
  for (const auto& r : v.rows)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

TEST(LinkValidation, MediansErrorAndShareOfEachRun) {
  const std::string db = fresh_db("lv_medians.db");
  const int64_t S = 4'000'000, s = 40'008, small = 4'000;
  {
    ResultStore store(db);
    // Dense: one allreduce of S per step; at P = 2 that is 2 α terms and S bus bytes.
    RunSpec dense = run_spec("dense/np2", "dense", 2, links(2, 1, "100mbit"));
    const std::vector<double> comm = {2.0, 1.5, 0.50, 0.44, 0.46, 0.48};
    const std::vector<double> compute = {3.0, 0.9, 0.50, 0.40, 0.60, 0.55};
    for (size_t i = 0; i < comm.size(); ++i) dense.steps.push_back({compute[i], comm[i], 2, S});
    dense.ops = {{"allreduce", 1, S, S}};
    write_run(store, dense);
    // DGC: a sparse allgatherv of s per rank (its count included) and a small dense allreduce.
    RunSpec dgc = run_spec("dgc/np2", "dgc", 2, links(2, 1, "100mbit"));
    for (int i = 0; i < 5; ++i) dgc.steps.push_back({0.7, 0.05 + 0.01 * i, 2 + 2, s + small});
    dgc.ops = {{"allgatherv", 1, s, s}, {"allreduce", 1, small, small}};
    write_run(store, dgc);
    // Local SGD: the model averaged at steps 3 and 7 only.
    RunSpec local = run_spec("local-sgd/np2", "local-sgd", 2, links(2, 1, "100mbit"));
    for (int i = 0; i < 8; ++i) {
      const bool sync = i % 4 == 3;
      local.steps.push_back({0.5, sync ? (i == 3 ? 0.6 : 0.7) : 0.001, sync ? 2 : 0, sync ? S : 0});
    }
    local.ops = {{"allreduce", 1, S, S, /*calls_in_run=*/2}};
    write_run(store, local);
  }
  const LinkValidation v = validate_links({db}, {profile_2x1("100mbit")}, "", 2);
  ASSERT_EQ(v.rows.size(), 3u);
  ASSERT_EQ(v.rates, std::vector<std::string>{"100mbit"});

  const LinkValidationRow& d = row(v, "dense/np2");
  EXPECT_TRUE(d.excluded.empty()) << d.excluded;
  EXPECT_EQ(d.steps, 4) << "steps 2 to 5";
  EXPECT_DOUBLE_EQ(d.measured_comm, (0.46 + 0.48) / 2);
  EXPECT_DOUBLE_EQ(d.compute, (0.50 + 0.55) / 2);
  const double dense_model = 2 * kAlphaAr + double(S) * kBetaAr;
  EXPECT_NEAR(d.modeled_comm, dense_model, 1e-12);
  EXPECT_NEAR(d.relative_error(), (dense_model - 0.47) / 0.47, 1e-12);
  EXPECT_NEAR(d.comm_share(), 0.47 / (0.47 + 0.525), 1e-12);
  EXPECT_NEAR(d.mean_step_seconds, (1.0 + 0.84 + 1.06 + 1.03) / 4, 1e-12);
  EXPECT_EQ(v.profiles[size_t(d.profile)].profile.name, "vc-100mbit-2x1");

  // Each collective on its own fit: the allgatherv's two rounds of P − 1 α terms, the allreduce's.
  const LinkValidationRow& g = row(v, "dgc/np2");
  EXPECT_EQ(g.steps, 3);
  EXPECT_NEAR(g.modeled_comm,
              2 * kAlphaAgv + double(s) * kBetaAgv + 2 * kAlphaAr + double(small) * kBetaAr, 1e-12);
  EXPECT_DOUBLE_EQ(g.measured_comm, 0.08);

  // Only the averaging steps moved bytes: the medians are theirs, the mean step every step's.
  const LinkValidationRow& l = row(v, "local-sgd/np2");
  EXPECT_EQ(l.steps, 2);
  EXPECT_DOUBLE_EQ(l.measured_comm, 0.65);
  EXPECT_NEAR(l.modeled_comm, dense_model, 1e-12);
  EXPECT_NEAR(l.mean_step_seconds, 0.5 + (0.001 * 4 + 0.6 + 0.7) / 6, 1e-12);

  const std::string md = render_link_validation_markdown(v);
  EXPECT_NE(md.find("measured on shaped links: comm s/step"), std::string::npos) << md;
  EXPECT_NE(md.find("modeled (profile vc-100mbit-2x1): comm s/step"), std::string::npos) << md;
  EXPECT_NE(md.find("| dense/np2 | 2 | 4 | 0.47 | 0.4 | -14.9% | 0.525 | 47% |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("after its first 2 (warm-up)"), std::string::npos) << md;
}

TEST(LinkValidation, HeadlineIsTheMedianAbsoluteErrorAtFourRanksWhereCommunicationDominates) {
  const std::string db = fresh_db("lv_headline.db");
  const int64_t S = 2'000'000;
  const double alpha = 80e-6, beta = 2e-7;
  // At P = 4: 6 α terms and 1.5 S bus bytes per allreduce.
  const double model = 6 * alpha + 1.5 * double(S) * beta;
  // (relative error, compute seconds): the last spends most of its step computing.
  const std::vector<std::pair<double, double>> runs = {
      {+0.10, 0.1}, {-0.30, 0.1}, {+0.05, 0.2}, {+2.0, 50.0}};
  {
    ResultStore store(db);
    for (size_t i = 0; i < runs.size(); ++i) {
      RunSpec r = run_spec("r" + std::to_string(i) + "/np4", "dense", 4, links(2, 2, "300mbit"));
      const double measured = model / (1 + runs[i].first);
      for (int k = 0; k < 4; ++k) r.steps.push_back({runs[i].second, measured, 6, S * 3 / 2});
      r.ops = {{"allreduce", 1, S, S * 3 / 2}};
      write_run(store, r);
    }
  }
  const std::string profile =
      profile_file("vc-300mbit-2x2", 2, 2, "300mbit", 4, {{"allreduce", 4, {alpha, beta}}});
  const LinkValidation v = validate_links({db}, {profile}, "", 1);
  for (size_t i = 0; i < runs.size(); ++i)
    EXPECT_NEAR(v.rows[i].relative_error(), runs[i].first, 1e-9) << v.rows[i].name;
  EXPECT_LT(v.rows[3].comm_share(), 0.5);
  EXPECT_EQ(v.headline_runs, 3);
  EXPECT_NEAR(v.headline_median_abs_error, 0.10, 1e-9);
  EXPECT_NEAR(v.headline_median_error, 0.05, 1e-9);
  const std::string md = render_link_validation_markdown(v);
  EXPECT_NE(md.find("Over the 3 run(s) at P = 4"), std::string::npos) << md;
  EXPECT_NE(md.find("is 10.0% (signed median +5.0%"), std::string::npos) << md;
  EXPECT_NE(md.find("within the 15% target"), std::string::npos) << md;
}

// Runs at P = 4 whose communication dominates, each with its name and relative error.
LinkValidation headline_of(const std::string& file,
                           const std::vector<std::pair<std::string, double>>& runs) {
  const std::string db = fresh_db(file);
  const int64_t S = 2'000'000;
  const double alpha = 80e-6, beta = 2e-7;
  const double model = 6 * alpha + 1.5 * double(S) * beta;
  {
    ResultStore store(db);
    std::map<std::string, int> seeds;
    for (const auto& [name, error] : runs) {
      RunSpec r = run_spec(name, "dense", 4, links(2, 2, "300mbit"));
      r.seed = ++seeds[name];
      for (int k = 0; k < 4; ++k) r.steps.push_back({0.01, model / (1 + error), 6, S * 3 / 2});
      r.ops = {{"allreduce", 1, S, S * 3 / 2}};
      write_run(store, r);
    }
  }
  const std::string profile =
      profile_file("vc-300mbit-2x2", 2, 2, "300mbit", 4, {{"allreduce", 4, {alpha, beta}}});
  return validate_links({db}, {profile}, "", 1);
}

TEST(LinkValidation, HeadlineIntervalByRunsAndByRepeatedUnits) {
  // 8 runs, |errors| .02 ... .34: the 95% interval of their median is the extremes (the 1st
  // smallest and largest of 8: 1 - 2/256 = 99.2%; the 2nd gives 1 - 2 * 9/256 = 93.0%).
  const LinkValidation v = headline_of("lv_interval.db", {{"a/np4", -0.02},
                                                          {"a/np4", 0.03},
                                                          {"a/np4", -0.04},
                                                          {"b/np4", -0.30},
                                                          {"b/np4", -0.32},
                                                          {"b/np4", 0.34},
                                                          {"c/np4", 0.05},
                                                          {"d/np4", -0.06}});
  EXPECT_EQ(v.headline_runs, 8);
  EXPECT_NEAR(v.headline_median_abs_error, 0.055, 1e-9);
  ASSERT_TRUE(v.headline_interval);
  EXPECT_NEAR(v.headline_interval->low, 0.02, 1e-9);
  EXPECT_NEAR(v.headline_interval->high, 0.34, 1e-9);
  EXPECT_NEAR(v.headline_interval->coverage, 1 - 2.0 / 256, 1e-12);
  // Units: a .03, b .32, c .05, d .06: median .055, and 4 units give no 95% interval.
  EXPECT_EQ(v.headline_units, 4);
  EXPECT_NEAR(v.headline_unit_median, 0.055, 1e-9);
  EXPECT_FALSE(v.headline_unit_interval);
  const std::string md = render_link_validation_markdown(v);
  EXPECT_NE(md.find("(the 1st smallest and largest of the 8 errors, taken as independent draws "
                    "of one distribution; coverage 99.2%): 2.0% to 34.0%. The target is "
                    "undecided: the interval holds the target."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("the median over the 4 units is 5.5%; with fewer than 6 units no 95% "
                    "interval exists."),
            std::string::npos)
      << md;

  // The errors plot draws a repeated name at its median: a's -2%, b's -30%.
  const std::string dir = ::testing::TempDir() + "/lv_interval_plots";
  write_link_validation_plots(v, dir, /*draw=*/false);
  std::ifstream tsv(dir + "/data/link_validation_errors.tsv");
  const std::string errors{std::istreambuf_iterator<char>(tsv), {}};
  EXPECT_NE(errors.find("a/np4\t-2\n"), std::string::npos) << errors;
  EXPECT_NE(errors.find("b/np4\t-30\n"), std::string::npos) << errors;
  std::ifstream gp(dir + "/link_validation_errors.gp");
  const std::string script{std::istreambuf_iterator<char>(gp), {}};
  EXPECT_NE(script.find("the median of its repeated runs"), std::string::npos) << script;

  // Met and missed; one run per name: no paragraph of units.
  std::vector<std::pair<std::string, double>> low, high;
  for (int i = 0; i < 6; ++i) {
    low.push_back({"r" + std::to_string(i) + "/np4", 0.01 * (i + 1)});
    high.push_back({"r" + std::to_string(i) + "/np4", -0.2 - 0.01 * i});
  }
  const std::string met = render_link_validation_markdown(headline_of("lv_met.db", low));
  EXPECT_NE(met.find("1.0% to 6.0%. The target is met: the interval lies within the target."),
            std::string::npos)
      << met;
  EXPECT_EQ(met.find("units"), std::string::npos) << met;
  const std::string missed = render_link_validation_markdown(headline_of("lv_missed.db", high));
  EXPECT_NE(
      missed.find("20.0% to 25.0%. The target is missed: the interval lies above the target."),
      std::string::npos)
      << missed;
  // Fewer than 6 runs: no interval, no verdict.
  const std::string few =
      render_link_validation_markdown(headline_of("lv_few.db", {{"a/np4", 0.01}, {"b/np4", 0.02}}));
  EXPECT_NE(few.find("With fewer than 6 such runs no 95% distribution-free interval"),
            std::string::npos)
      << few;
}

TEST(LinkValidation, CrossoverMeasuredOverRatesAndPredictedFromEach) {
  const int64_t S = 4'000'000, s = 80'000;
  // Mean step seconds (comm + compute) at 100mbit, 300mbit, 1gbit.
  const std::map<std::string, std::vector<double>> step = {
      {"dense", {10.0, 3.5, 1.2}}, {"topk", {2.0, 1.9, 1.6}}, {"qsgd", {3.0, 1.6, 1.1}}};
  const std::vector<std::string> rates = {"100mbit", "300mbit", "1gbit"};
  // The calibrated allreduce reaches 60% of each rate.
  std::vector<std::string> dbs, profiles;
  for (size_t k = 0; k < rates.size(); ++k) {
    dbs.push_back(fresh_db("lv_crossover_" + rates[k] + ".db"));
    ResultStore store(dbs.back());
    for (const auto& [name, seconds] : step) {
      RunSpec r = run_spec(name + "/np2", name, 2, links(2, 1, rates[k]));
      const double compute = name == "dense" ? 0.4 : 0.5;
      const bool sparse = name != "dense";
      for (int i = 0; i < 4; ++i)
        r.steps.push_back({compute, seconds[k] - compute, sparse ? 1 : 2, sparse ? s : S});
      r.ops = {sparse ? Op{"allgather", 1, s, s} : Op{"allreduce", 1, S, S}};
      write_run(store, r);
    }
    const double bits = link_rate_bits(rates[k]);
    profiles.push_back(profile_2x1(rates[k], 8 / (0.6 * bits)));
  }
  const LinkValidation v = validate_links(dbs, profiles, "", 1);
  ASSERT_EQ(v.rates, rates);
  ASSERT_EQ(v.crossovers.size(), 2u);
  const LinkCrossover* topk = nullptr;
  for (const auto& c : v.crossovers)
    if (c.name == "topk/np2")
      topk = &c;
    else
      EXPECT_EQ(c.measured.wins, "always") << c.name;
  ASSERT_NE(topk, nullptr);
  // Faster by 8 s and 1.6 s at 100 and 300 Mbit/s, slower by 0.4 s at 1 Gbit/s: the difference
  // is linear in 1/rate between 300mbit and 1gbit and crosses 0 at x.
  EXPECT_EQ(topk->measured.wins, "below");
  EXPECT_EQ(topk->measured.between, "300mbit and 1gbit");
  const double x = 1 / 300e6 + 1.6 * (1 / 1e9 - 1 / 300e6) / (0.4 + 1.6);
  EXPECT_NEAR(topk->measured.bits_per_second, 1 / x, 1e-3);
  // Predicted from each rate alone: a = compute + α·(α terms), b = bus bytes, per step (the
  // steps per epoch cancel): top-k's extra compute 0.1 s less α (1 term against 2) against the
  // S − s bytes it saves: the model's crossover at (S − s) / (0.1 − α) bytes/s, and as a link
  // rate that over the 60% of the rate the allreduce reached.
  ASSERT_EQ(topk->predicted.size(), 3u);
  const double model_bytes = double(S - s) / (0.1 - kAlphaAr);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(topk->predicted[k].rate, rates[k]);
    EXPECT_EQ(topk->predicted[k].wins, "below");
    EXPECT_NEAR(topk->predicted[k].model_gbps, model_bytes * 8 / 1e9, 1e-9);
    EXPECT_NEAR(topk->predicted[k].bits_per_second, model_bytes * 8 / 0.6, 1);
  }
  const std::string md = render_link_validation_markdown(v);
  EXPECT_NE(md.find("| topk/np2 | below " + std::to_string(int(std::round(1 / x / 1e6))) +
                    " Mbit/s (interpolated between 300mbit and 1gbit) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("modeled (profile vc-100mbit-2x1) from the 100mbit runs"), std::string::npos)
      << md;
}

// Runs of dense SGD and of a method "m" at P = 2 on 2 x 1 links at each rate, each run's four
// steps lasting the seconds given per name, rate and seed (0.5 s of it compute), one database per
// rate named `prefix` + rate; m's measured crossing and the markdown of the validation.
std::pair<LinkCrossover::Verdict, std::string> measured_crossing_of_m(
    const std::string& prefix, const std::vector<std::string>& rates,
    const std::map<std::string, std::vector<std::vector<double>>>& step) {
  const int64_t S = 4'000'000;
  std::vector<std::string> dbs, profiles;
  for (size_t k = 0; k < rates.size(); ++k) {
    dbs.push_back(fresh_db(prefix + rates[k] + ".db"));
    ResultStore store(dbs.back());
    for (const auto& [name, seconds] : step)
      for (size_t seed = 0; seed < seconds[k].size(); ++seed) {
        RunSpec r = run_spec(name + "/np2", name, 2, links(2, 1, rates[k]));
        r.seed = int(seed) + 1;
        for (int i = 0; i < 4; ++i) r.steps.push_back({0.5, seconds[k][seed] - 0.5, 2, S});
        r.ops = {{"allreduce", 1, S, S}};
        write_run(store, r);
      }
    profiles.push_back(profile_2x1(rates[k]));
  }
  const LinkValidation v = validate_links(dbs, profiles, "", 1);
  for (const auto& c : v.crossovers)
    if (c.name == "m/np2") return {c.measured, render_link_validation_markdown(v)};
  throw std::runtime_error("no crossover of m/np2");
}

TEST(LinkValidation, ACrossingWithinTheRunsSpreadIsUnresolved) {
  // Two runs of each name at each rate, their mean steps: at 100mbit the method's (2.0, 2.2) lie
  // below dense SGD's (9.0, 11.0); at 1gbit the method's mean 1.3 (1.1, 1.5) is above dense SGD's
  // 1.2 (1.0, 1.4), but their runs overlap. With `apart`, dense SGD's 1gbit runs are 0.9 and 1.0
  // instead (mean 0.95): separated.
  auto crossing = [&](bool apart) {
    const std::vector<std::string> rates = {"100mbit", "1gbit"};
    const std::map<std::string, std::vector<std::vector<double>>> step = {
        {"dense",
         {{9.0, 11.0}, apart ? std::vector<double>{0.9, 1.0} : std::vector<double>{1.0, 1.4}}},
        {"m", {{2.0, 2.2}, {1.1, 1.5}}}};
    return measured_crossing_of_m(std::string("lv_spread_") + (apart ? "apart_" : ""), rates, step);
  };
  const auto [overlap, md] = crossing(false);
  EXPECT_EQ(overlap.wins, "below");
  EXPECT_TRUE(overlap.within_spread);
  // The means: 2.1 - 10.0 = -7.9 at 100mbit, 1.3 - 1.2 = +0.1 at 1gbit, crossing 0 at x in 1/rate.
  const double x = 1 / 100e6 + 7.9 * (1 / 1e9 - 1 / 100e6) / (7.9 + 0.1);
  EXPECT_NEAR(overlap.bits_per_second, 1 / x, 1e-3);
  EXPECT_NE(md.find("(interpolated between 100mbit and 1gbit); unresolved: at one of those rates "
                    "the runs of the method and of dense SGD overlap |"),
            std::string::npos)
      << md;
  const auto [apart, md_apart] = crossing(true);
  EXPECT_EQ(apart.wins, "below");
  EXPECT_FALSE(apart.within_spread);
  EXPECT_EQ(md_apart.find("unresolved"), std::string::npos) << md_apart;
}

TEST(LinkValidation, AnUnresolvedCrossingIsBracketedByTheNearestRatesWhereTheRunsAreApart) {
  // Two runs of each name at four rates, the method's mean step minus dense SGD's: -7.9 at
  // 100mbit (apart), -0.1 at 300mbit and +0.1 at 1gbit (both overlapping), and at 3gbit +0.3 with
  // the runs apart (`far_apart`) or +0.1 overlapping. The sign changes between 300mbit and 1gbit;
  // the nearest rates where the runs are apart are 100mbit below and 3gbit above, or none above.
  auto crossing = [&](bool far_apart) {
    const std::vector<std::string> rates = {"100mbit", "300mbit", "1gbit", "3gbit"};
    const std::map<std::string, std::vector<std::vector<double>>> step = {
        {"dense", {{9.0, 11.0}, {2.0, 2.4}, {1.0, 1.4}, {0.9, 1.0}}},
        {"m",
         {{2.0, 2.2},
          {1.9, 2.3},
          {1.1, 1.5},
          far_apart ? std::vector<double>{1.2, 1.35} : std::vector<double>{0.95, 1.15}}}};
    return measured_crossing_of_m(std::string("lv_bracket_") + (far_apart ? "apart_" : ""), rates,
                                  step);
  };
  const auto [bracketed, md] = crossing(true);
  EXPECT_EQ(bracketed.wins, "below");
  EXPECT_EQ(bracketed.between, "300mbit and 1gbit");
  EXPECT_TRUE(bracketed.within_spread);
  EXPECT_EQ(bracketed.resolved_between, "100mbit and 3gbit");
  // Interpolated between the two rates around the sign change, as without a bracket: -0.1 at
  // 1/300e6 and +0.1 at 1/1e9 in 1/rate.
  const double x = 1 / 300e6 + 0.1 * (1 / 1e9 - 1 / 300e6) / 0.2;
  EXPECT_NEAR(bracketed.bits_per_second, 1 / x, 1e-3);
  EXPECT_NE(md.find("(interpolated between 300mbit and 1gbit); at one of those rates the runs of "
                    "the method and of dense SGD overlap, so the crossing is resolved only between "
                    "100mbit and 3gbit (the nearest rates around it where they are apart) |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("unresolved"), std::string::npos) << md;
  const auto [open, md_open] = crossing(false);
  EXPECT_TRUE(open.within_spread);
  EXPECT_EQ(open.resolved_between, "");
  EXPECT_NE(md_open.find("; unresolved: at one of those rates"), std::string::npos) << md_open;
}

// A hierarchical exchange's run of 3 steps at P = 4: rank 0's step an allreduce of S among its
// node's 2 ranks and an allgather of s among the 2 leaders, nothing on the run's own
// communicator; each level's seconds per step from `intra_seconds` and `inter_seconds` (none
// recorded when empty), the step's comm seconds their sum (0.25 s when none).
RunSpec hierarchical_run(const std::string& on, int64_t S, int64_t s,
                         const std::vector<double>& intra_seconds = {},
                         const std::vector<double>& inter_seconds = {}) {
  RunSpec h = run_spec("hierarchical/np4", "hierarchical", 4, on);
  for (size_t i = 0; i < 3; ++i) {
    const bool timed = !intra_seconds.empty();
    h.steps.push_back({0.3, timed ? intra_seconds[i] + inter_seconds[i] : 0.25, 2 + 1, S + s});
    h.levels.push_back({{"intra", "shm", 2, 1, S, S, 2, 0, timed ? intra_seconds[i] : 0},
                        {"inter", "10gbe", 2, 1, s, s, 1, 0, timed ? inter_seconds[i] : 0}});
  }
  h.ops = {{"intra/allreduce", 1, S, S}, {"inter/allgather", 1, s, s}};
  h.inter_ranks = {0, 2};
  return h;
}

TEST(LinkValidation, LevelsBetweenHostsOnTheProfileOfOneRankPerHost) {
  const std::string db = fresh_db("lv_levels.db");
  const int64_t S = 1'000'000, s = 50'000;
  {
    ResultStore store(db);
    write_run(store, hierarchical_run(links(2, 2, "100mbit"), S, s));
  }
  const std::string own =
      profile_file("vc-100mbit-2x2", 2, 2, "100mbit", 4, {{"allgather", 4, {1e-3, 1e-6}}});
  const LinkValidation v = validate_links({db}, {own, profile_2x1("100mbit")}, "", 0);
  const LinkValidationRow& r = row(v, "hierarchical/np4");
  const NetworkProfile& shm = find_network_profile("shm");
  EXPECT_NEAR(r.modeled_comm, 2 * shm.alpha + double(S) * shm.beta + 100e-6 + double(s) * 1.2e-7,
              1e-12);
  EXPECT_NE(r.level_profiles.find("inter: vc-100mbit-2x1 at P = 2"), std::string::npos)
      << r.level_profiles;
}

// Calibrated on 2 hosts x 2 ranks with --world-sizes 2,4, a profile's fits at P = 2 were timed
// on one host's two ranks (the hostfile fills a host's slots first): the hierarchical exchange's
// level inside a host is costed on them, and its level between hosts, without a profile of one
// rank per host, on the same profile without them. Each level's measured seconds (step_levels)
// are set against its modeled ones.
TEST(LinkValidation, LevelInsideAHostOnTheRunsOwnFitsAtItsRanks) {
  const std::string db = fresh_db("lv_intra_own.db");
  const int64_t S = 1'000'000, s = 50'000;
  {
    ResultStore store(db);
    write_run(store, hierarchical_run(links(2, 2, "100mbit"), S, s, {0.10, 0.12, 0.11},
                                      {0.05, 0.07, 0.06}));
  }
  const double a_intra = 20e-6, b_intra = 2e-9;  // allreduce on one host's 2 ranks
  const std::string own = profile_file("vc-100mbit-2x2", 2, 2, "100mbit", 4,
                                       {{"allreduce", 4, {2e-3, 2e-7}},
                                        {"allreduce", 2, {a_intra, b_intra}},
                                        {"allgather", 4, {1e-3, 1e-6}},
                                        {"allgather", 2, {5e-6, 1e-9}}});
  const LinkValidation v = validate_links({db}, {own}, "", 0);
  const LinkValidationRow& r = row(v, "hierarchical/np4");
  const double intra = 2 * a_intra + double(S) * b_intra;  // ring at P = 2: 2 α, S bus bytes
  const double inter = 1e-3 + double(s) * 1e-6;            // the allgather fit at P = 4
  EXPECT_NEAR(r.modeled_comm, intra + inter, 1e-12);
  EXPECT_NE(r.level_profiles.find("intra: vc-100mbit-2x2 at P = 2 (fits timed within a host)"),
            std::string::npos)
      << r.level_profiles;
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_EQ(r.levels[0].name, "inter");
  EXPECT_NEAR(r.levels[0].measured_comm, 0.06, 1e-12);
  EXPECT_NEAR(r.levels[0].modeled_comm, inter, 1e-12);
  EXPECT_EQ(r.levels[1].name, "intra");
  EXPECT_NEAR(r.levels[1].measured_comm, 0.11, 1e-12);
  EXPECT_NEAR(r.levels[1].modeled_comm, intra, 1e-12);
  const std::string md = render_link_validation_markdown(v);
  char expected[256];
  std::snprintf(expected, sizeof expected,
                "; per level, measured on shaped links against modeled comm s/step (medians): "
                "inter 0.06 against %.3g (%+.1f%%), intra 0.11 against %.3g (%+.1f%%)",
                inter, 100 * (inter - 0.06) / 0.06, intra, 100 * (intra - 0.11) / 0.11);
  EXPECT_NE(md.find(expected), std::string::npos) << expected << "\n" << md;
  // The document's profiles table shows the fits the levels took: the own profile's at P = 2
  // (intra) beside its P = 4 ones (the run's, and inter's without a profile of one rank per host).
  ASSERT_EQ(r.level_fits.size(), 1u);
  EXPECT_EQ(r.level_fits[0], std::make_pair(0, 2));
  LinkValidationDocument d;
  d.path = ::testing::TempDir() + "lv_intra_own_doc/validation.md";
  d.shown.databases = {db};
  d.shown.profiles = {own};
  d.shown.document = "docs/validation.md";
  d.render = false;
  std::filesystem::create_directories(::testing::TempDir() + "lv_intra_own_doc");
  write_link_validation_document(v, d);
  std::ifstream in(d.path);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(doc.find("| vc-100mbit-2x2 | 2 | allreduce | 20.0 | 2.000 | 4.000 |"),
            std::string::npos)
      << doc;
  EXPECT_NE(doc.find("| vc-100mbit-2x2 | 4 | allreduce | 2000.0 | 200.000 | 0.040 |"),
            std::string::npos)
      << doc;

  // On links of one rank per host a profile's fits at P = 2 crossed the link: the level inside a
  // host (had the run one) stays on the nominal profile, and nothing is taken away between hosts.
  const std::string db1 = fresh_db("lv_intra_own_2x1.db");
  {
    ResultStore store(db1);
    write_run(store, hierarchical_run(links(4, 1, "100mbit"), S, s));
  }
  const std::string own1 = profile_file("vc-100mbit-4x1", 4, 1, "100mbit", 4,
                                        {{"allreduce", 4, {2e-3, 2e-7}},
                                         {"allreduce", 2, {a_intra, b_intra}},
                                         {"allgather", 4, {1e-3, 1e-6}},
                                         {"allgather", 2, {5e-6, 1e-9}}});
  const LinkValidationRow& r1 = row(validate_links({db1}, {own1}, "", 0), "hierarchical/np4");
  const NetworkProfile& shm = find_network_profile("shm");
  EXPECT_NEAR(r1.modeled_comm, 2 * shm.alpha + double(S) * shm.beta + 5e-6 + double(s) * 1e-9,
              1e-12);
}

TEST(LinkValidation, ParameterServerRoundOnTheServersLink) {
  const std::string db = fresh_db("lv_ps.db");
  const int64_t push = 1'000'016, pull = 1'000'008;
  {
    ResultStore store(db);
    RunSpec p = run_spec("ps-bsp/np2", "ps", 2, links(2, 1, "100mbit"));
    p.servers = 1;
    for (int i = 0; i < 4; ++i) p.steps.push_back({0.4, 0.3, 2, push});
    p.ops = {{"send", 2, push / 2, push / 2}};  // the worker's header and gradient
    p.server_sends = pull;
    write_run(store, p);
  }
  const LinkValidation v = validate_links({db}, {profile_2x1("100mbit")}, "", 0);
  // Under bsp one round of W = 1 worker and S = 1 server: 4 messages and push + pull bytes, each
  // on the sendrecv fit.
  EXPECT_NEAR(row(v, "ps-bsp/np2").modeled_comm, 4 * 30e-6 + double(push + pull) * 0.9e-7, 1e-9);
  EXPECT_TRUE(v.crossovers.empty()) << "no dense run of the same workers";
  // A step row's seconds and bus bytes are one direction of the round (the push), the model's
  // the whole round: the two are not compared, and say why.
  EXPECT_NE(row(v, "ps-bsp/np2").excluded.find("one direction of a round"), std::string::npos)
      << row(v, "ps-bsp/np2").excluded;
}

// A calibrated allreduce whose 8/β is above the link's rate (here 1.5 times it) gives the model's
// bandwidth but no link rate: dividing by a share of the rate above 1 would be meaningless.
TEST(LinkValidation, APredictionFromAFitFasterThanTheLinkGivesNoLinkRate) {
  const int64_t S = 4'000'000, s = 80'000;
  const std::string db = fresh_db("lv_fit_above_rate.db");
  {
    ResultStore store(db);
    for (const std::string name : {"dense", "topk"}) {
      RunSpec r = run_spec(name + "/np2", name, 2, links(2, 1, "100mbit"));
      const bool sparse = name == "topk";
      for (int i = 0; i < 4; ++i)
        r.steps.push_back({sparse ? 0.5 : 0.4, sparse ? 1.5 : 9.6, sparse ? 1 : 2, sparse ? s : S});
      r.ops = {sparse ? Op{"allgather", 1, s, s} : Op{"allreduce", 1, S, S}};
      write_run(store, r);
    }
  }
  const LinkValidation v = validate_links({db}, {profile_2x1("100mbit", 8 / (1.5 * 100e6))}, "", 1);
  ASSERT_EQ(v.crossovers.size(), 1u);
  ASSERT_EQ(v.crossovers[0].predicted.size(), 1u);
  const LinkCrossover::Verdict& p = v.crossovers[0].predicted[0];
  EXPECT_EQ(p.wins, "below");
  EXPECT_GT(p.model_gbps, 0);
  EXPECT_EQ(p.bits_per_second, 0) << "no link rate from a fit faster than the link";
  EXPECT_NEAR(p.fit_over_rate, 1.5, 1e-9);
  const std::string md = render_link_validation_markdown(v);
  EXPECT_NE(md.find("the allreduce fit is 1.50x the link's rate: no link rate follows"),
            std::string::npos)
      << md;
}

TEST(LinkValidation, DescribesLinksAsTheClusterDoes) {
  ClusterState c;
  c.spec.hosts = 3;
  c.spec.ranks_per_host = 1;
  c.spec.rate = "300mbit";
  c.spec.burst = "64kb";
  const auto l = shaped_links_of("{\"links\":" + c.links_json() + "}");
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(describe_links(*l), c.describe());
  EXPECT_DOUBLE_EQ(l->bits_per_second, 300e6);
  EXPECT_FALSE(shaped_links_of(R"({"command":"cedar run"})").has_value());
  EXPECT_FALSE(shaped_links_of("").has_value());
  EXPECT_DOUBLE_EQ(link_rate_bits("1.5gbit"), 1.5e9);
  EXPECT_THROW(link_rate_bits("fast"), std::invalid_argument);
}

// The message of what validate_links throws.
std::string error_of(const std::vector<std::string>& dbs, const std::vector<std::string>& files) {
  try {
    validate_links(dbs, files, "", 0);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LinkValidation, ErrorsNameTheFileAndWhatIsWrong) {
  const int64_t S = 1'000'000;
  auto dense = [&](const std::string& l, int world) {
    RunSpec r = run_spec("dense/np" + std::to_string(world), "dense", world, l);
    r.steps = {{0.1, 0.2, 2, S}, {0.1, 0.2, 2, S}};
    r.ops = {{"allreduce", 1, S, S}};
    return r;
  };
  const std::string own = fresh_db("lv_own_links.db");
  {
    ResultStore store(own);
    write_run(store, dense("", 2));  // no links: this machine's own
  }
  std::string e = error_of({own}, {profile_2x1("100mbit")});
  EXPECT_NE(e.find(own + ": no completed run was measured on shaped links"), std::string::npos)
      << e;

  const std::string at100 = fresh_db("lv_100.db");
  {
    ResultStore store(at100);
    write_run(store, dense(links(2, 1, "100mbit"), 2));
  }
  const std::string other = profile_2x1("1gbit");
  e = error_of({at100}, {other});
  EXPECT_NE(e.find(at100 + ": run 'dense/np2' (P = 2) was measured on 2 hosts x 1 rank, 100mbit"),
            std::string::npos)
      << e;
  EXPECT_NE(
      e.find(other + ": 'vc-1gbit-2x1', measured on virtual cluster: 2 hosts x 1 rank, 1gbit"),
      std::string::npos)
      << e;

  const std::string at4 = fresh_db("lv_p4.db");
  {
    ResultStore store(at4);
    write_run(store, dense(links(2, 2, "100mbit"), 4));
  }
  const std::string only2 =
      profile_file("vc-100mbit-2x2", 2, 2, "100mbit", 4, {{"allreduce", 2, {1e-5, 1e-7}}});
  e = error_of({at4}, {only2});
  EXPECT_NE(e.find(only2 + ": profile 'vc-100mbit-2x2' was calibrated on 2 hosts x 2 ranks, "
                           "100mbit full duplex per host (tbf, burst 256kb) but has fits at P = 2, "
                           "not at P = 4"),
            std::string::npos)
      << e;

  const std::string mixed = fresh_db("lv_mixed.db");
  {
    ResultStore store(mixed);
    write_run(store, dense(links(2, 1, "100mbit"), 2));
    RunSpec fast = dense(links(2, 1, "1gbit"), 2);
    fast.name = "dense-again/np2";
    write_run(store, fast);
  }
  e = error_of({mixed}, {profile_2x1("100mbit"), profile_2x1("1gbit")});
  EXPECT_NE(e.find(mixed + ": runs measured at several rates (100mbit, 1gbit)"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace cedar
