// results/step_queries.h, step_stat_queries.h and comm_queries.h: each query returns the step,
// evaluation, step_stats, step_levels and comm_totals rows written through the store, NULL columns
// as empty optionals, in its documented order.
#include "results/step_queries.h"

#include <gtest/gtest.h>

#include "results/comm_queries.h"
#include "results/step_stat_queries.h"
#include "results/store.h"
#include "tests/unit/read_api_fixture.h"

namespace cedar {
namespace {

using read_api_test::exec_sql;
using read_api_test::fresh_db;
using read_api_test::record;
using read_api_test::step_row;

// A finished run of `steps` step rows, epoch e holding steps_per_epoch of them.
int64_t write_run(ResultStore& store, const RunRecord& r, int64_t steps, int64_t steps_per_epoch,
                  const std::string& status = "completed") {
  const int64_t id = store.begin_run(r);
  for (int64_t i = 0; i < steps; ++i)
    store.add_step(id, step_row(i, i / steps_per_epoch, 1.0 + double(i)));
  store.finish_run(id, status, "", {});
  return id;
}

TEST(StepQueries, StepAndEvaluationTimesInStepOrder) {
  const std::string path = fresh_db("step_queries_times.db");
  int64_t run, ps, empty;
  {
    ResultStore store(path);
    run = write_run(store, record("s", "a", 1), 5, 3);
    EvalRow e;
    e.step = 5;
    e.wall_seconds = 9.5;
    store.add_eval(run, e);
    e.step = 3;
    e.wall_seconds = 4.25;
    store.add_eval(run, e);
    RunRecord p = record("s", "ps", 1, 3);
    p.workers = 2;
    p.servers = 1;
    ps = store.begin_run(p);
    StepRow s = step_row(0, 0, 0.5);
    s.stats = {{"gradients", 1}};
    store.add_step(ps, s);
    store.finish_run(ps, "completed", "", {});
    empty = write_run(store, record("s", "b", 1), 0, 1);
  }
  ResultsReader db(path);
  const auto steps = read_step_times(db, run);
  ASSERT_EQ(steps.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(steps[size_t(i)].step, i);
    EXPECT_EQ(steps[size_t(i)].epoch, i / 3);
    EXPECT_DOUBLE_EQ(steps[size_t(i)].wall_seconds, 1.0 + double(i));
    EXPECT_DOUBLE_EQ(steps[size_t(i)].share, 1.0);
  }
  const auto ps_steps = read_step_times(db, ps);
  ASSERT_EQ(ps_steps.size(), 1u);
  EXPECT_DOUBLE_EQ(ps_steps[0].share, 0.5) << "one of 2 workers' steps";

  const auto evals = read_eval_times(db, run);
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals[0].step, 3);
  EXPECT_DOUBLE_EQ(evals[0].wall_seconds, 4.25);
  EXPECT_EQ(evals[1].step, 5);
  EXPECT_DOUBLE_EQ(evals[1].wall_seconds, 9.5);

  EXPECT_EQ(read_longest_epoch_steps(db, run), std::optional<int64_t>(3));
  EXPECT_FALSE(read_longest_epoch_steps(db, empty).has_value());
  EXPECT_TRUE(read_step_times(db, empty).empty());
}

TEST(StepQueries, StepSecondsAndTermsInStepOrder) {
  const std::string path = fresh_db("step_queries_seconds.db");
  int64_t run;
  {
    ResultStore store(path);
    run = store.begin_run(record("s", "a", 1));
    for (int64_t i : {2, 0, 1}) {  // written out of order
      StepRow s = step_row(i, 0, 1.0 + double(i));
      s.compute_seconds = 0.5 + double(i);
      s.comm_seconds = 0.25 * double(i);
      s.latency_steps = 2 + i;
      s.bus_bytes = 1000 * i;
      store.add_step(run, s);
    }
    store.finish_run(run, "completed", "", {});
  }
  ResultsReader db(path);
  const auto steps = read_step_seconds(db, run);
  ASSERT_EQ(steps.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    const StepSeconds& s = steps[size_t(i)];
    EXPECT_EQ(s.step, i);
    EXPECT_DOUBLE_EQ(s.compute_seconds, 0.5 + double(i));
    EXPECT_DOUBLE_EQ(s.comm_seconds, 0.25 * double(i));
    EXPECT_EQ(s.latency_steps, 2 + i);
    EXPECT_EQ(s.bus_bytes, 1000 * i);
  }
  EXPECT_TRUE(read_step_seconds(db, run + 1).empty());
}

TEST(StepQueries, CompletedCurvesOfTheLatestCompletedRunOfEachNameAndSeed) {
  const std::string path = fresh_db("step_queries_curves.db");
  int64_t b2, a1_old, a1, b1;
  {
    ResultStore store(path);
    auto run = [&](const std::string& name, int64_t seed, const std::string& status) {
      const int64_t id = store.begin_run(record("c", name, seed));
      for (int64_t i = 0; i < 2; ++i) {
        StepRow s = step_row(i, 0, double(id) + double(i));
        store.add_step(id, s);
        EvalRow e;
        e.step = i + 1;
        e.epoch = 0.5 * double(i + 1);
        e.wall_seconds = double(id) + double(i) + 0.5;
        e.cum_payload_bytes = 1000 * (i + 1);
        e.cum_bus_bytes = 1500 * (i + 1);
        e.test_loss = 1.5;
        e.test_accuracy = 0.125 * double(id);
        e.train_loss = 1.25;
        e.train_accuracy = 0.375;
        e.consensus_distance = 0.0625;
        store.add_eval(id, e);
      }
      store.finish_run(id, status, "", {});
      return id;
    };
    b2 = run("b", 2, "completed");
    a1_old = run("a", 1, "completed");
    a1 = run("a", 1, "completed");
    run("a", 0, "failed");
    b1 = run("b", 1, "completed");
    run("a", 1, "failed");  // after the latest completed one: that one is still shown
  }
  exec_sql(path,
           "UPDATE evals SET train_loss = NULL, train_accuracy = NULL, "
           "consensus_distance = NULL WHERE run_id = " +
               std::to_string(b1));
  (void)a1_old;

  ResultsReader db(path);
  const auto evals = read_completed_evals(db, "c");
  ASSERT_EQ(evals.size(), 6u);
  const int64_t order[] = {a1, b1, b2};
  for (size_t i = 0; i < evals.size(); ++i) {
    const EvalPoint& e = evals[i];
    EXPECT_EQ(e.run_id, order[i / 2]) << i;
    EXPECT_EQ(e.step, int64_t(i % 2) + 1);
    EXPECT_DOUBLE_EQ(e.epoch, 0.5 * double(e.step));
    EXPECT_DOUBLE_EQ(e.wall_seconds, double(e.run_id) + double(e.step) - 0.5);
    EXPECT_EQ(e.cum_payload_bytes, 1000 * e.step);
    EXPECT_EQ(e.cum_bus_bytes, 1500 * e.step);
    EXPECT_DOUBLE_EQ(e.test_loss, 1.5);
    EXPECT_DOUBLE_EQ(e.test_accuracy, 0.125 * double(e.run_id));
    if (e.run_id == b1) {
      EXPECT_FALSE(e.train_loss.has_value());
      EXPECT_FALSE(e.train_accuracy.has_value());
      EXPECT_FALSE(e.consensus_distance.has_value());
    } else {
      EXPECT_EQ(e.train_loss, std::optional<double>(1.25));
      EXPECT_EQ(e.train_accuracy, std::optional<double>(0.375));
      EXPECT_EQ(e.consensus_distance, std::optional<double>(0.0625));
    }
  }
  EXPECT_EQ(evals[0].name, "a");
  EXPECT_EQ(evals[2].name, "b");
  EXPECT_EQ(evals[2].seed, 1);
  EXPECT_EQ(evals[4].seed, 2);

  const auto losses = read_completed_losses(db, "c");
  ASSERT_EQ(losses.size(), 6u);
  for (size_t i = 0; i < losses.size(); ++i) {
    EXPECT_EQ(losses[i].run_id, order[i / 2]) << i;
    EXPECT_EQ(losses[i].step, int64_t(i % 2));
    EXPECT_DOUBLE_EQ(losses[i].train_loss, 2.0 - 0.125 * double(losses[i].step));
  }
  EXPECT_EQ(read_completed_evals(db, "").size(), 6u);
  EXPECT_TRUE(read_completed_losses(db, "other").empty());
}

TEST(StepQueries, WindowBytesPerSeedOverStepsEpochsOrTheLastEpoch) {
  const std::string path = fresh_db("step_queries_window.db");
  {
    ResultStore store(path);
    write_run(store, record("w", "q", 2), 4, 2);  // epochs 0 0 1 1
    write_run(store, record("w", "q", 1), 6, 3);  // epochs 0 0 0 1 1 1
    write_run(store, record("w", "q", 3), 6, 3, "failed");
    write_run(store, record("w", "other", 1), 6, 3);
  }
  ResultsReader db(path);
  auto check = [&](const StepWindow& w, int64_t seed1_steps, int64_t seed2_steps) {
    const auto rows = read_window_bytes(db, "w", "q", w);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].seed, 1);
    EXPECT_EQ(rows[1].seed, 2);
    const int64_t steps[] = {seed1_steps, seed2_steps};
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(rows[i].steps, steps[i]);
      EXPECT_DOUBLE_EQ(rows[i].payload_per_rank, 100.0 / 2 * double(steps[i]));
      EXPECT_EQ(rows[i].bus_bytes, 30 * steps[i]);
      EXPECT_EQ(rows[i].dense_bytes, 50 * steps[i]);
    }
  };
  check({0, -1, false}, 6, 4);
  check({2, -1, false}, 4, 2);
  check({0, 1, false}, 3, 2);
  check({0, -1, true}, 3, 2);
  EXPECT_TRUE(read_window_bytes(db, "w", "q", {10, -1, false}).empty()) << "no steps there";
  EXPECT_TRUE(read_window_bytes(db, "", "q", {}).empty()) << "suite is matched exactly";
}

TEST(StepStatQueries, GapUploadsAndStaleness) {
  const std::string path = fresh_db("step_stat_queries.db");
  int64_t lag, plain, ps, old_ps;
  {
    ResultStore store(path);
    lag = store.begin_run(record("g", "lag", 1));
    const std::vector<std::vector<std::pair<std::string, double>>> stats = {
        {{"gap", 0.5}, {"uploads", 2}},
        {{"gap", 0.25}},
        {{"gap", 0.125}, {"gap_reached", 1}, {"uploads", 1}},
        {{"gap", 0.0625}, {"gap_reached", 1}}};
    for (size_t i = 0; i < stats.size(); ++i) {
      StepRow s = step_row(int64_t(i), 0, 1.0);
      s.stats = stats[i];
      store.add_step(lag, s);
    }
    store.finish_run(lag, "completed", "", {});
    plain = write_run(store, record("g", "plain", 1), 2, 2);
    RunRecord p = record("g", "ps", 1, 3);
    p.workers = 2;
    p.servers = 1;
    ps = store.begin_run(p);
    const double staleness[] = {0, 1, 3, 1};
    for (int64_t i = 0; i < 4; ++i) {
      StepRow s = step_row(i, 0, 1.0);
      s.stats = {{"staleness", staleness[i]}};
      store.add_step(ps, s);
    }
    store.finish_run(ps, "completed", "", {});
    old_ps = store.begin_run(record("g", "ps", 2, 3));
    StepRow s = step_row(0, 0, 1.0);
    s.stats = {{"staleness", 2}};
    store.add_step(old_ps, s);
    store.finish_run(old_ps, "completed", "", {});
  }
  exec_sql(path,
           "UPDATE runs SET workers = NULL, servers = NULL WHERE id = " + std::to_string(old_ps));
  ResultsReader db(path);

  const GapStats gap = read_gap_stats(db, lag);
  EXPECT_EQ(gap.final_gap, std::optional<double>(0.0625));
  EXPECT_EQ(gap.first_reached_step, std::optional<int64_t>(2));
  const GapStats none = read_gap_stats(db, plain);
  EXPECT_FALSE(none.final_gap.has_value());
  EXPECT_FALSE(none.first_reached_step.has_value());
  // Steps 0 and 1: 2 uploads recorded, then the default for a step without the stat.
  EXPECT_DOUBLE_EQ(read_uploads_before(db, lag, 4, 2), 2 + 4);
  EXPECT_DOUBLE_EQ(read_uploads_before(db, lag, 4, 4), 2 + 4 + 1 + 4);
  EXPECT_DOUBLE_EQ(read_uploads_before(db, lag, 4, 0), 0);

  const auto counts = read_staleness_counts(db, "g");
  ASSERT_EQ(counts.size(), 4u);
  const int64_t expected[][3] = {{ps, 0, 1}, {ps, 1, 2}, {ps, 3, 1}, {old_ps, 2, 1}};
  for (size_t i = 0; i < counts.size(); ++i) {
    EXPECT_EQ(counts[i].run_id, expected[i][0]) << i;
    EXPECT_EQ(counts[i].staleness, expected[i][1]) << i;
    EXPECT_EQ(counts[i].updates, expected[i][2]) << i;
    EXPECT_EQ(counts[i].name, "ps");
    EXPECT_EQ(counts[i].world_size, 3);
  }
  EXPECT_EQ(counts[0].workers, 2);
  EXPECT_EQ(counts[0].servers, 1);
  EXPECT_EQ(counts[0].seed, 1);
  EXPECT_EQ(counts[3].workers, 3) << "NULL workers: the world size";
  EXPECT_EQ(counts[3].servers, 0) << "NULL servers: none";
  EXPECT_EQ(counts[3].seed, 2);
}

TEST(CommQueries, OpTotalsLevelsAndLevelTotals) {
  const std::string path = fresh_db("comm_queries.db");
  int64_t run, flat;
  {
    ResultStore store(path);
    run = store.begin_run(record("h", "hier", 1, 4));
    for (int64_t i = 0; i < 2; ++i) {
      StepRow s = step_row(i, 0, 1.0 + double(i));
      s.levels = {{"intra", "shm", 2, 1, 100, 100, 1, 0.25, 0.125 + double(i)},
                  {"inter", "10gbe", 2, 1, 20, 20, 2, 1.0, 0.5}};
      store.add_step(run, s);
    }
    // Ranks 0 and 2 lead the nodes (inter); the split that formed the groups is left out.
    store.add_comm_totals(run, {{0, "allreduce", 3, 0, 12, 18, 0},
                                {1, "allreduce", 3, 0, 12, 18, 0},
                                {0, "intra/allreduce", 2, 0, 200, 200, 0},
                                {1, "intra/allreduce", 2, 0, 200, 200, 0},
                                {0, "intra/split", 1, 0, 8, 8, 0},
                                {0, "inter/allgather", 2, 0, 40, 40, 0},
                                {2, "inter/allgather", 2, 0, 40, 60, 0},
                                {3, "intra/allreduce", 2, 0, 200, 200, 0}});
    store.finish_run(run, "completed", "", {});
    flat = write_run(store, record("h", "flat", 1), 2, 2);
  }
  {
    ResultsReader db(path);
    const auto ops = read_op_totals(db, run);
    ASSERT_EQ(ops.size(), 4u);
    EXPECT_EQ(ops[0].op, "allreduce");
    EXPECT_EQ(ops[0].calls, 6);
    EXPECT_EQ(ops[0].payload_bytes, 24);
    EXPECT_EQ(ops[0].rank0_bus_bytes, 18);
    EXPECT_EQ(ops[0].ranks, 2);
    EXPECT_EQ(ops[1].op, "inter/allgather");
    EXPECT_EQ(ops[1].payload_bytes, 80);
    EXPECT_EQ(ops[1].rank0_bus_bytes, 40);
    EXPECT_EQ(ops[1].ranks, 2);
    EXPECT_EQ(ops[2].op, "intra/allreduce");
    EXPECT_EQ(ops[2].ranks, 3);
    EXPECT_EQ(ops[3].op, "intra/split");
    EXPECT_TRUE(read_op_totals(db, flat).empty());

    const auto terms = read_step_level_terms(db, run);
    ASSERT_EQ(terms.size(), 4u) << "two steps, two levels each";
    EXPECT_EQ(terms[0].step, 0);
    EXPECT_EQ(terms[0].level, "inter");
    EXPECT_EQ(terms[0].profile, "10gbe");
    EXPECT_EQ(terms[0].ranks, 2);
    EXPECT_EQ(terms[0].latency_steps, 2);
    EXPECT_EQ(terms[0].bus_bytes, 20);
    EXPECT_EQ(terms[1].level, "intra");
    EXPECT_EQ(terms[1].latency_steps, 1);
    EXPECT_EQ(terms[1].bus_bytes, 100);
    EXPECT_EQ(terms[0].comm_seconds, std::optional<double>(0.5));
    EXPECT_EQ(terms[1].comm_seconds, std::optional<double>(0.125));
    EXPECT_EQ(terms[3].step, 1);
    EXPECT_EQ(terms[3].comm_seconds, std::optional<double>(1.125));
    EXPECT_TRUE(read_step_level_terms(db, flat).empty());

    const auto levels = read_run_levels(db, run);
    ASSERT_EQ(levels.size(), 2u);
    EXPECT_EQ(levels[0].level, "inter");
    EXPECT_EQ(levels[0].profile, "10gbe");
    EXPECT_EQ(levels[0].ranks, 2);
    EXPECT_EQ(levels[1].level, "intra");
    EXPECT_EQ(levels[1].profile, "shm");
    EXPECT_TRUE(read_run_levels(db, flat).empty());

    const auto totals = read_level_totals(db, "h");
    ASSERT_EQ(totals.size(), 2u) << "only the run with levels, one row per level";
    const LevelTotals& inter = totals[0];
    EXPECT_EQ(inter.run_id, run);
    EXPECT_EQ(inter.name, "hier");
    EXPECT_EQ(inter.algorithm, "dense");
    EXPECT_EQ(inter.world_size, 4);
    EXPECT_EQ(inter.seed, 1);
    EXPECT_EQ(inter.level, "inter");
    EXPECT_EQ(inter.profile, "10gbe");
    EXPECT_EQ(inter.ranks, 2);
    EXPECT_EQ(inter.steps, 2);
    EXPECT_EQ(inter.payload_bytes, 40);
    EXPECT_EQ(inter.bus_bytes, 40);
    EXPECT_DOUBLE_EQ(inter.modeled_comm_seconds, 2.0);
    EXPECT_EQ(inter.all_ranks_payload_bytes, 80);
    EXPECT_EQ(inter.all_ranks_bus_bytes, 100);
    const LevelTotals& intra = totals[1];
    EXPECT_EQ(intra.level, "intra");
    EXPECT_EQ(intra.payload_bytes, 200);
    EXPECT_DOUBLE_EQ(intra.modeled_comm_seconds, 0.5);
    EXPECT_EQ(intra.all_ranks_payload_bytes, 600) << "the split left out";
    EXPECT_EQ(intra.all_ranks_bus_bytes, 600);
  }
  {
    // A database from before schema version 6 recorded no seconds per level: none read.
    exec_sql(path, "ALTER TABLE step_levels DROP COLUMN comm_seconds");
    ResultsReader db(path);
    EXPECT_FALSE(db.has_column("step_levels", "comm_seconds"));
    EXPECT_TRUE(db.has_column("step_levels", "bus_bytes"));
    const auto terms = read_step_level_terms(db, run);
    ASSERT_EQ(terms.size(), 4u);
    for (const auto& t : terms) EXPECT_FALSE(t.comm_seconds) << t.step << " " << t.level;
    EXPECT_EQ(terms[1].bus_bytes, 100);
  }
  // A database from before schema version 3 has no step_levels: no levels, no error.
  exec_sql(path, "DROP TABLE step_levels");
  ResultsReader db(path);
  EXPECT_FALSE(db.has_table("step_levels"));
  EXPECT_TRUE(read_run_levels(db, run).empty());
  EXPECT_TRUE(read_level_totals(db, "h").empty());
  EXPECT_TRUE(read_step_level_terms(db, run).empty());
  EXPECT_EQ(read_op_totals(db, run).size(), 4u);
}

}  // namespace
}  // namespace cedar
