#pragma once
// A read-only connection to a results database, for the typed queries that the reports use
// (results/run_queries.h, step_queries.h, step_stat_queries.h, comm_queries.h). It does not
// create, migrate or write: a database of an older schema is read as it is.
#include <string>

struct sqlite3;

namespace cedar {

class ResultsReader {
 public:
  // Opens `path` read-only with the writers' busy timeout (60 s). Throws StoreError naming `path`
  // when it cannot be opened or holds no runs table (not a Cedar results database).
  explicit ResultsReader(const std::string& path);
  ~ResultsReader();
  ResultsReader(const ResultsReader&) = delete;
  ResultsReader& operator=(const ResultsReader&) = delete;

  const std::string& path() const { return path_; }
  // For the query functions of results/: statements are prepared on it (results/statement.h).
  sqlite3* handle() const { return db_; }
  // True when the database has table `name` (step_levels came with schema version 3).
  bool has_table(const std::string& name);
  // True when table `table` has column `column` (step_levels.comm_seconds came with version 6).
  bool has_column(const std::string& table, const std::string& column);

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace cedar
