// The results dump behind regenerable reports (results/sql_dump.h, results/gzip_file.h): one
// suite's runs and their rows round-trip exactly, other suites stay out, an older schema migrates
// on load, and a damaged gzip file is an error, not a short read.
#include "results/sql_dump.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "results/database.h"
#include "results/gzip_file.h"
#include "tests/unit/results_fixture.h"
#include "tests/unit/sqlite_query.h"

namespace cedar {
namespace {

using testing_sql::query;
using testing_sql::query_text;

std::string fresh(const std::string& name) {
  auto p = std::filesystem::path(::testing::TempDir()) / ("sql_dump_" + name);
  std::filesystem::remove(p);
  return p.string();
}

fixture::RunSpec run(const std::string& suite, const std::string& name, int64_t seed) {
  fixture::RunSpec s;
  s.suite = suite;
  s.name = name;
  s.algorithm = name;
  s.seed = seed;
  s.dense_bytes = 4000;
  s.final_accuracy = 0.1 + 0.7 / 3 * static_cast<double>(seed);  // not a short decimal
  s.best_accuracy = s.final_accuracy;
  s.wall_seconds = 1.0 / 3;
  s.evals = {{0.5, 0.25}, {1.0 / 7, s.final_accuracy}};
  s.collectives = {{"allreduce", 1, {4000, 4000}}};
  return s;
}

std::string written_db(const std::string& name) {
  const std::string db = fresh(name);
  ResultStore store(db);
  fixture::write_run(store, run("a", "dense", 1));
  fixture::write_run(store, run("b", "dense", 1));
  fixture::write_run(store, run("a", "topk", 2));
  return db;
}

TEST(SqlDump, OneSuiteRoundTripsExactly) {
  const std::string db = written_db("source.db");
  const std::string sql = dump_suite_sql(db, "a");
  const std::string loaded = fresh("loaded.db");
  load_sql_dump(sql, loaded);
  EXPECT_EQ(query(loaded, "SELECT COUNT(*) FROM runs"), 2);
  EXPECT_EQ(query(loaded, "SELECT COUNT(*) FROM runs WHERE suite <> 'a'"), 0);
  EXPECT_EQ(query(loaded, "SELECT COUNT(*) FROM steps"),
            query(db,
                  "SELECT COUNT(*) FROM steps WHERE run_id IN "
                  "(SELECT id FROM runs WHERE suite = 'a')"));
  // Ids kept (the reports name runs by id) and reals bit for bit.
  EXPECT_EQ(query_text(loaded, "SELECT group_concat(id) FROM (SELECT id FROM runs ORDER BY id)"),
            "1,3");
  EXPECT_EQ(query_text(loaded,
                       "SELECT hex(final_test_accuracy) || hex(wall_seconds) FROM runs "
                       "WHERE id = 3"),
            query_text(db,
                       "SELECT hex(final_test_accuracy) || hex(wall_seconds) FROM runs "
                       "WHERE id = 3"));
  EXPECT_EQ(query(loaded, "PRAGMA user_version"), kSchemaVersion);
  // Dumping what was loaded gives the same text: nothing lost or reordered.
  EXPECT_EQ(dump_suite_sql(loaded, "a"), sql);
  EXPECT_EQ(dump_suite_sql(db, "a"), sql) << "the dump of a database is not deterministic";
}

TEST(SqlDump, LoadsOnlyIntoANewDatabase) {
  const std::string db = written_db("existing.db");
  EXPECT_THROW(load_sql_dump(dump_suite_sql(db, "a"), db), StoreError);
}

TEST(SqlDump, AnOlderSchemaMigratesOnLoad) {
  // A database of schema version 1: runs without the columns added since, no step_levels.
  const std::string old_sql =
      "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, suite TEXT NOT NULL DEFAULT '', "
      "name TEXT NOT NULL, algorithm TEXT NOT NULL, model TEXT NOT NULL, dataset TEXT NOT NULL, "
      "world_size INTEGER NOT NULL, seed INTEGER NOT NULL, config TEXT NOT NULL, config_hash "
      "TEXT NOT NULL, code_version TEXT NOT NULL, host TEXT NOT NULL, backend TEXT NOT NULL, "
      "network TEXT NOT NULL DEFAULT '', threads INTEGER NOT NULL, parameters INTEGER NOT NULL "
      "DEFAULT 0, start_time TEXT NOT NULL, end_time TEXT, status TEXT NOT NULL, error TEXT, "
      "final_test_accuracy REAL, best_test_accuracy REAL, wall_seconds REAL, "
      "total_payload_bytes INTEGER, total_bus_bytes INTEGER);"
      "CREATE TABLE evals (run_id INTEGER NOT NULL, step INTEGER NOT NULL, epoch REAL NOT NULL, "
      "wall_seconds REAL NOT NULL, cum_payload_bytes INTEGER NOT NULL, cum_bus_bytes INTEGER NOT "
      "NULL, test_loss REAL NOT NULL, test_accuracy REAL NOT NULL, train_loss REAL, "
      "train_accuracy REAL, PRIMARY KEY (run_id, step));"
      "INSERT INTO runs VALUES(7,'s','dense','dense','lenet5','mnist',2,1,'name: dense','h','v1',"
      "'host','mpi','1gbe',1,0,'2026-01-01T00:00:00Z','2026-01-01T00:01:00Z','completed',NULL,"
      "0.5,0.5,60.0,100,150);"
      "INSERT INTO evals VALUES(7,10,1.0,60.0,100,150,0.7,0.5,NULL,NULL);";
  const std::string old_db = fresh("old.db");
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(old_db.c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, old_sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
  }
  const std::string sql = dump_suite_sql(old_db, "s");
  EXPECT_NE(sql.find("PRAGMA user_version=0;"), std::string::npos);
  const std::string loaded = fresh("old_loaded.db");
  load_sql_dump(sql, loaded);
  EXPECT_EQ(query(loaded, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(query(loaded,
                  "SELECT COUNT(*) FROM runs WHERE id = 7 AND workers IS NULL AND "
                  "uuid IS NOT NULL AND attempt = 0"),
            1);
  EXPECT_EQ(query(loaded, "SELECT COUNT(*) FROM evals WHERE consensus_distance IS NULL"), 1);
  EXPECT_EQ(query(loaded, "SELECT COUNT(*) FROM step_levels"), 0);  // created by the schema
}

TEST(GzipFile, RoundTripAndDamage) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "INSERT INTO steps VALUES(" + std::to_string(i) + ");\n";
  const std::string path = fresh("text.sql.gz");
  write_gzip_file(path, text);
  EXPECT_EQ(read_gzip_file(path), text);
  const auto size = std::filesystem::file_size(path);
  EXPECT_LT(size, text.size() / 4);
  // The same text gives the same bytes (no time or name in the header).
  std::ifstream first(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(first)), {});
  write_gzip_file(path, text);
  std::ifstream second(path, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(second)), {}), bytes);
  std::filesystem::resize_file(path, size / 2);
  EXPECT_THROW(read_gzip_file(path), std::runtime_error);
}

}  // namespace
}  // namespace cedar
