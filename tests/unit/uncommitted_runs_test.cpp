// Runs built from uncommitted changes are marked in the reports (reports/uncommitted_runs.h): the
// comparison table's rows that hold one carry the mark, a note under the table names each run's
// revision and diff hash, and the provenance table's revision names them too; clean runs, and a
// dirty run a clean rerun has replaced, carry no mark.
#include "reports/uncommitted_runs.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <sstream>

#include "reports/comparison.h"
#include "reports/provenance_table.h"
#include "tests/unit/results_fixture.h"

namespace cedar {
namespace {

const std::string kDiff(64, 'c');
const std::string kCommit = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

// Sets run `id`'s code version and the source fields of its provenance, as a build recorded them.
void set_source(const std::string& path, int64_t id, const std::string& version,
                const std::string& provenance) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE runs SET code_version=?, provenance=? WHERE id=?", -1,
                               &st, nullptr),
            SQLITE_OK);
  sqlite3_bind_text(st, 1, version.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, provenance.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 3, id);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

std::string provenance(const std::string& version, const std::string& diff) {
  return R"({"revision":")" + version + R"(","commit":")" + kCommit + R"(","diff":")" + diff +
         R"("})";
}

// The line of `text` that starts with `prefix` ("" when none).
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

struct Ids {
  int64_t dense_dirty = 0, dense = 0, qsgd_dirty = 0, qsgd = 0, topk_old = 0;
};

// dense seed 1: a dirty run, then a clean rerun; qsgd: seed 1 dirty, seed 2 clean; topk: a run
// written before diff hashes were recorded, its version ending in -dirty.
Ids write_runs(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  Ids ids;
  {
    ResultStore store(path);
    fixture::RunSpec s;
    s.suite = "t";
    s.collectives = {{"allreduce", 1, {400, 400}}};
    s.final_accuracy = 0.5;
    s.name = s.algorithm = "dense";
    ids.dense_dirty = fixture::write_run(store, s);
    ids.dense = fixture::write_run(store, s);
    s.name = s.algorithm = "qsgd";
    ids.qsgd_dirty = fixture::write_run(store, s);
    s.seed = 2;
    ids.qsgd = fixture::write_run(store, s);
    s.seed = 1;
    s.name = s.algorithm = "topk";
    ids.topk_old = fixture::write_run(store, s);
  }
  set_source(path, ids.dense_dirty, "v1-1-gbbbbbbb-dirty",
             provenance("v1-1-gbbbbbbb-dirty", kDiff));
  set_source(path, ids.dense, "v1-1-gbbbbbbb", provenance("v1-1-gbbbbbbb", ""));
  set_source(path, ids.qsgd_dirty, "v1-1-gbbbbbbb-dirty", provenance("v1-1-gbbbbbbb-dirty", kDiff));
  set_source(path, ids.qsgd, "v1-1-gbbbbbbb", provenance("v1-1-gbbbbbbb", ""));
  set_source(path, ids.topk_old, "v0.9-dirty", R"({"revision":"v0.9-dirty"})");
  return ids;
}

TEST(UncommittedRuns, TheLatestRunsBuiltWithChanges) {
  const std::string path = ::testing::TempDir() + "uncommitted_runs_test.db";
  const Ids ids = write_runs(path);
  const auto runs = load_uncommitted_runs(path, "t");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, ids.qsgd_dirty);
  EXPECT_EQ(runs[0].diff, kDiff);
  EXPECT_EQ(runs[1].id, ids.topk_old);
  EXPECT_EQ(runs[1].diff, "");
  EXPECT_TRUE(load_uncommitted_runs(path, "another suite").empty());
}

TEST(UncommittedRuns, ComparisonTableMarksTheirRowsAndNamesTheDiff) {
  const std::string path = ::testing::TempDir() + "uncommitted_runs_md_test.db";
  const Ids ids = write_runs(path);
  const auto rows = compare_runs(load_runs(path, "t"));
  const auto runs = load_uncommitted_runs(path, "t");
  const std::string md = render_markdown_marked(rows, runs);
  const std::string mark = kUncommittedMark;
  EXPECT_NE(line_starting(md, "| qsgd |").find("2 completed " + mark + " |"), std::string::npos)
      << md;
  EXPECT_NE(line_starting(md, "| topk |").find("1 completed " + mark + " |"), std::string::npos)
      << md;
  EXPECT_EQ(line_starting(md, "| dense |").find(mark), std::string::npos) << md;
  EXPECT_NE(md.find("- run " + std::to_string(ids.qsgd_dirty) +
                    ", qsgd (seed 1): v1-1-gbbbbbbb-dirty, changes sha256 " + kDiff + "\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- run " + std::to_string(ids.topk_old) +
                    ", topk (seed 1): v0.9-dirty, changes not recorded\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("run " + std::to_string(ids.dense_dirty) + ","), std::string::npos) << md;
  EXPECT_EQ(md.find("qsgd (seed 2)"), std::string::npos) << md;

  const std::string tex = render_latex_marked(rows, runs);
  EXPECT_NE(tex.find("qsgd$^\\dagger$ &"), std::string::npos) << tex;
  EXPECT_EQ(tex.find("dense$^\\dagger$"), std::string::npos) << tex;
  EXPECT_NE(tex.find("changes sha256 " + kDiff), std::string::npos) << tex;
}

TEST(UncommittedRuns, CleanRunsAreLeftAsTheyWere) {
  const std::string path = ::testing::TempDir() + "uncommitted_runs_clean_test.db";
  write_runs(path);
  const auto rows = compare_runs(load_runs(path, "t"));
  EXPECT_EQ(render_markdown_marked(rows, {}), render_markdown(rows));
  EXPECT_EQ(render_latex_marked(rows, {}), render_latex(rows));
  EXPECT_FALSE(built_uncommitted("v1-1-gbbbbbbb", ""));
  EXPECT_FALSE(built_uncommitted("unknown", ""));
  EXPECT_TRUE(built_uncommitted("v1-1-gbbbbbbb-dirty", ""));
  EXPECT_TRUE(built_uncommitted("unknown", kDiff));
}

TEST(UncommittedRuns, ProvenanceTableNamesTheCommitAndTheDiff) {
  const std::string path = ::testing::TempDir() + "uncommitted_runs_provenance_test.db";
  write_runs(path);
  const std::string md = render_provenance_markdown(load_provenance(path, "t"));
  const std::string mark = kUncommittedMark;
  EXPECT_NE(md.find("| v1-1-gbbbbbbb-dirty (" + kCommit + ") " + mark + " changes sha256 " + kDiff +
                    " |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| v1-1-gbbbbbbb (" + kCommit + ") |"), std::string::npos) << md;
  EXPECT_NE(md.find("| v0.9-dirty " + mark + " changes not recorded |"), std::string::npos) << md;
}

}  // namespace
}  // namespace cedar
