#pragma once
// A results database as plain SQL text, and back. The dump is written by iterating sqlite_master
// and the rows themselves (no sqlite3 command-line tool needed), so that a report's data can be
// committed beside it and the report regenerated from the repository alone (`cedar report
// --regenerate`). It holds one suite's runs and every row that names one of them (any table with
// a run_id column), the schema of every table as the source database has it, and its schema
// version; loading it goes through the store's migrations, so a dump of an older schema opens
// as the current one.
//
// Deterministic: tables by name, rows in rowid order, integers in decimal, reals in the shortest
// form that reads back to the same double, text quoted as SQL literals. No timestamps.
#include <string>

namespace cedar {

// The SQL text of the runs of `suite` (every run when empty) in the database at `db_path` and the
// rows naming them. Throws StoreError naming the path when it cannot be read.
std::string dump_suite_sql(const std::string& db_path, const std::string& suite);

// Creates the database `db_path` (which must not exist) from `sql`, then opens it through the
// store's migrations (results/database.h). Throws StoreError naming the path on failure.
void load_sql_dump(const std::string& sql, const std::string& db_path);

}  // namespace cedar
