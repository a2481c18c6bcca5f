#include "results/export_table.h"

#include <sqlite3.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "results/store.h"

namespace cedar {
namespace {

struct ReadOnly {
  sqlite3* db = nullptr;
  ~ReadOnly() { sqlite3_close(db); }
};

std::string query_for(const std::string& table) {
  const std::string suite_runs = "(?1 = '' OR r.suite = ?1)";
  if (table == "runs") return "SELECT r.* FROM runs r WHERE " + suite_runs + " ORDER BY r.id";
  if (table == "steps" || table == "evals")
    return "SELECT t.run_id, r.name AS run_name, r.seed, t.* FROM " + table +
           " t JOIN runs r ON r.id = t.run_id WHERE " + suite_runs + " ORDER BY t.run_id, t.step";
  throw std::invalid_argument("export: no table '" + table + "' (runs, steps or evals)");
}

std::string real_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

void export_table(const std::string& db_path, const std::string& table, const std::string& suite,
                  ExportFormat format, std::ostream& out) {
  const std::string sql = query_for(table);
  ReadOnly c;
  if (sqlite3_open_v2(db_path.c_str(), &c.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    throw StoreError("cannot open results database " + db_path + ": " +
                     (c.db ? sqlite3_errmsg(c.db) : "out of memory"));
  sqlite3_busy_timeout(c.db, 60000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(c.db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    throw StoreError("results database " + db_path + ": cannot read " + table + ": " +
                     sqlite3_errmsg(c.db));
  sqlite3_bind_text(st, 1, suite.c_str(), static_cast<int>(suite.size()), SQLITE_TRANSIENT);
  const int n = sqlite3_column_count(st);
  // The joined rows repeat run_id (first, and again among the table's own columns): once only.
  std::vector<int> columns;
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    const std::string name = sqlite3_column_name(st, i);
    if (i >= 3 && table != "runs" && name == "run_id") continue;
    columns.push_back(i);
    names.push_back(name);
  }
  if (format == ExportFormat::kCsv) {
    for (size_t k = 0; k < names.size(); ++k) out << (k ? "," : "") << csv_field(names[k]);
    out << "\n";
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    nlohmann::ordered_json row = nlohmann::ordered_json::object();
    for (size_t k = 0; k < columns.size(); ++k) {
      const int i = columns[k];
      const int type = sqlite3_column_type(st, i);
      if (format == ExportFormat::kCsv) {
        std::string field;
        if (type == SQLITE_INTEGER)
          field = std::to_string(sqlite3_column_int64(st, i));
        else if (type == SQLITE_FLOAT)
          field = real_text(sqlite3_column_double(st, i));
        else if (type != SQLITE_NULL)
          field = csv_field(reinterpret_cast<const char*>(sqlite3_column_text(st, i)));
        out << (k ? "," : "") << field;
      } else if (type == SQLITE_INTEGER) {
        row[names[k]] = static_cast<int64_t>(sqlite3_column_int64(st, i));
      } else if (type == SQLITE_FLOAT) {
        row[names[k]] = sqlite3_column_double(st, i);
      } else if (type == SQLITE_NULL) {
        row[names[k]] = nullptr;
      } else {
        row[names[k]] = std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i)));
      }
    }
    if (format == ExportFormat::kJsonl)
      out << row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out << "\n";
  }
  const std::string error = rc == SQLITE_DONE ? "" : sqlite3_errmsg(c.db);
  sqlite3_finalize(st);
  if (!error.empty())
    throw StoreError("results database " + db_path + ": cannot read " + table + ": " + error);
}

}  // namespace cedar
