// `cedar export` (results/export_table.h): a table's rows as CSV and JSON lines, read back here by
// a CSV parser and nlohmann::json and compared with what SQLite itself returns for the same rows:
// columns in schema order, one suite's runs only, fields with commas, quotes and line breaks,
// NULLs, reals that read back to the same double, steps named by their run.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "results/export_table.h"
#include "results/store.h"
#include "tests/unit/results_fixture.h"
#include "tests/unit/sqlite_query.h"

namespace cedar {
namespace {

using testing_sql::query;
using testing_sql::query_text;
using Row = std::vector<std::string>;

// RFC 4180, written for this test: fields split at commas outside quotes, "" inside quotes a quote.
std::vector<Row> parse_csv(const std::string& text) {
  std::vector<Row> rows;
  Row row;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
    } else if (c == '\n') {
      row.push_back(field);
      field.clear();
      rows.push_back(row);
      row.clear();
    } else {
      field += c;
    }
  }
  return rows;
}

std::vector<std::string> schema_columns(const std::string& db, const std::string& table) {
  std::vector<std::string> names;
  const int n =
      static_cast<int>(query(db, "SELECT COUNT(*) FROM pragma_table_info('" + table + "')"));
  for (int i = 0; i < n; ++i)
    names.push_back(query_text(db, "SELECT name FROM pragma_table_info('" + table +
                                       "') WHERE cid = " + std::to_string(i)));
  return names;
}

std::string written_db() {
  auto path = std::filesystem::path(::testing::TempDir()) / "export.db";
  std::filesystem::remove(path);
  {
    ResultStore store(path.string());
    fixture::RunSpec a;
    a.suite = "a";
    a.name = "dense";
    a.algorithm = "dense";
    a.final_accuracy = a.best_accuracy = 0.1 + 0.7 / 3;  // not a short decimal
    a.wall_seconds = 1.0 / 3;
    a.evals = {{0.5, 0.25}, {1.0, 0.5}};
    fixture::write_run(store, a);
    fixture::RunSpec b = a;
    b.suite = "b";
    b.name = "topk";
    fixture::write_run(store, b);
    fixture::RunSpec c = a;
    c.name = "fp16";
    c.seed = 2;
    fixture::write_run(store, c);
  }
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db,
               "UPDATE runs SET config = 'train: {epochs: 2, lr: \"0.1\"}' || char(10) || "
               "'name: x', error = NULL WHERE id = 1",
               nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return path.string();
}

std::string exported(const std::string& db, const std::string& table, const std::string& suite,
                     ExportFormat format) {
  std::ostringstream out;
  export_table(db, table, suite, format, out);
  return out.str();
}

TEST(Export, RunsAsCsvReadBackToTheDatabasesValues) {
  const std::string db = written_db();
  const auto rows = parse_csv(exported(db, "runs", "a", ExportFormat::kCsv));
  ASSERT_EQ(rows.size(), 3u) << "a header and suite a's two runs";
  EXPECT_EQ(rows[0], schema_columns(db, "runs"));
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < rows[0].size(); ++i)
      if (rows[0][i] == name) return i;
    ADD_FAILURE() << "no column " << name;
    return size_t{0};
  };
  EXPECT_EQ(rows[1][col("id")], "1");
  EXPECT_EQ(rows[2][col("id")], "3");
  EXPECT_EQ(rows[1][col("config")], query_text(db, "SELECT config FROM runs WHERE id = 1"));
  EXPECT_NE(rows[1][col("config")].find('\n'), std::string::npos);
  EXPECT_EQ(rows[1][col("error")], "");  // NULL
  const double acc = std::strtod(rows[1][col("final_test_accuracy")].c_str(), nullptr);
  EXPECT_EQ(acc, 0.1 + 0.7 / 3) << "a real must read back to the same double";
  for (const auto& r : rows) EXPECT_EQ(r.size(), rows[0].size());
}

TEST(Export, StepsAsJsonLinesNameTheirRun) {
  const std::string db = written_db();
  std::istringstream lines(exported(db, "steps", "", ExportFormat::kJsonl));
  std::vector<std::string> own = schema_columns(db, "steps");
  std::string line;
  int64_t n = 0, last_run = 0, last_step = -1;
  while (std::getline(lines, line)) {
    const auto row = nlohmann::ordered_json::parse(line);
    std::vector<std::string> keys;
    for (auto it = row.begin(); it != row.end(); ++it) keys.push_back(it.key());
    ASSERT_GE(keys.size(), 3u);
    EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + 3),
              (std::vector<std::string>{"run_id", "run_name", "seed"}));
    EXPECT_EQ(std::vector<std::string>(keys.begin() + 2, keys.end()).size(), own.size())
        << "the table's columns, run_id once";
    const int64_t run = row["run_id"], step = row["step"];
    EXPECT_TRUE(run > last_run || (run == last_run && step > last_step)) << "key order";
    last_run = run;
    last_step = step;
    EXPECT_EQ(row["run_name"].get<std::string>(),
              query_text(db, "SELECT name FROM runs WHERE id = " + std::to_string(run)));
    EXPECT_EQ(row["train_loss"].get<double>(),
              query(db, "SELECT train_loss FROM steps WHERE run_id = " + std::to_string(run) +
                            " AND step = " + std::to_string(step)));
    ++n;
  }
  EXPECT_EQ(n, query(db, "SELECT COUNT(*) FROM steps"));
  EXPECT_GT(n, 0);
}

TEST(Export, EvalsOfOneSuiteOnly) {
  const std::string db = written_db();
  const auto rows = parse_csv(exported(db, "evals", "b", ExportFormat::kCsv));
  ASSERT_EQ(rows.size(), 1 + query(db, "SELECT COUNT(*) FROM evals WHERE run_id = 2"));
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i][1], "topk");
}

TEST(Export, AMissingDatabaseOrTableIsNamed) {
  const std::string missing = ::testing::TempDir() + "/no_such_dir/x.db";
  try {
    exported(missing, "runs", "", ExportFormat::kCsv);
    ADD_FAILURE() << "exported a database that does not exist";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(exported(written_db(), "claims", "", ExportFormat::kCsv), std::invalid_argument);
}

}  // namespace
}  // namespace cedar
