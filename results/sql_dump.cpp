#include "results/sql_dump.h"

#include <sqlite3.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <vector>

#include "results/database.h"
#include "results/statement.h"

namespace cedar {
namespace {

struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close(db); }
};

// A value as an SQL literal that reads back as the same storage class and value.
std::string literal(sqlite3_stmt* st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return "NULL";
    case SQLITE_INTEGER: return std::to_string(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT: {
      const double v = sqlite3_column_double(st, i);
      if (std::isinf(v)) return v > 0 ? "1e999" : "-1e999";
      char buf[64];
      auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
      std::string s(buf, end);
      // Without a point or exponent SQLite would read an integer.
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    case SQLITE_BLOB: {
      static const char* const kHex = "0123456789abcdef";
      const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(st, i));
      std::string s = "X'";
      for (int k = 0; k < sqlite3_column_bytes(st, i); ++k) {
        s += kHex[p[k] >> 4];
        s += kHex[p[k] & 15];
      }
      return s + "'";
    }
    default: {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      std::string s = "'";
      for (const char* c = p; c && *c; ++c)
        s += *c == '\'' ? std::string("''") : std::string(1, *c);
      return s + "'";
    }
  }
}

std::string quoted_name(const std::string& name) {
  std::string s = "\"";
  for (char c : name) s += c == '"' ? std::string("\"\"") : std::string(1, c);
  return s + "\"";
}

bool has_column(sqlite3* db, const std::string& path, const std::string& table,
                const std::string& column) {
  Statement cols(db, path, ("PRAGMA table_info(" + quoted_name(table) + ")").c_str());
  while (cols.next())
    if (cols.text_column(1) == column) return true;
  return false;
}

void dump_rows(sqlite3* db, const std::string& path, const std::string& table,
               const std::string& where, const std::string& suite, std::string& out) {
  const std::string sql = "SELECT * FROM " + quoted_name(table) + where + " ORDER BY rowid";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    throw StoreError("results database " + path + ": cannot dump " + table + ": " +
                     sqlite3_errmsg(db));
  if (sql.find("?1") != std::string::npos)
    sqlite3_bind_text(st, 1, suite.c_str(), -1, SQLITE_TRANSIENT);
  const int columns = sqlite3_column_count(st);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    out += "INSERT INTO " + quoted_name(table) + " VALUES(";
    for (int i = 0; i < columns; ++i) out += (i ? "," : "") + literal(st, i);
    out += ");\n";
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    throw StoreError("results database " + path + ": cannot dump " + table + ": " +
                     sqlite3_errmsg(db));
}

}  // namespace

std::string dump_suite_sql(const std::string& db_path, const std::string& suite) {
  Connection c;
  if (sqlite3_open_v2(db_path.c_str(), &c.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    throw StoreError("cannot open results database " + db_path + ": " +
                     (c.db ? sqlite3_errmsg(c.db) : "out of memory"));
  sqlite3_busy_timeout(c.db, 60000);
  // One read transaction: the rows of every table from the same state of the database.
  sqlite3_exec(c.db, "BEGIN", nullptr, nullptr, nullptr);
  std::vector<std::pair<std::string, std::string>> tables, indexes;
  {
    Statement st(c.db, db_path,
                 "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT "
                 "LIKE 'sqlite_%' AND type IN ('table', 'index') ORDER BY name");
    while (st.next())
      (st.text_column(0) == "table" ? tables : indexes)
          .emplace_back(st.text_column(1), st.text_column(2));
  }
  std::string out = "-- Cedar results: the runs of suite '" + suite +
                    "' and the rows naming them (cedar report --document writes it; cedar report "
                    "--regenerate reads it).\nPRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n";
  for (const auto& [name, sql] : tables) out += sql + ";\n";
  const std::string runs_where = " WHERE (?1 = '' OR suite = ?1)";
  for (const auto& [name, sql] : tables) {
    if (name == "runs")
      dump_rows(c.db, db_path, name, runs_where, suite, out);
    else if (has_column(c.db, db_path, name, "run_id"))
      dump_rows(c.db, db_path, name, " WHERE run_id IN (SELECT id FROM runs" + runs_where + ")",
                suite, out);
  }
  for (const auto& [name, sql] : indexes) out += sql + ";\n";
  out += "PRAGMA user_version=" + std::to_string(schema_version(c.db, db_path)) + ";\nCOMMIT;\n";
  sqlite3_exec(c.db, "COMMIT", nullptr, nullptr, nullptr);
  return out;
}

void load_sql_dump(const std::string& sql, const std::string& db_path) {
  if (std::filesystem::exists(db_path))
    throw StoreError("results database " + db_path + " exists: a dump loads into a new one");
  {
    Connection c;
    if (sqlite3_open_v2(db_path.c_str(), &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        nullptr) != SQLITE_OK)
      throw StoreError("cannot create results database " + db_path);
    char* err = nullptr;
    if (sqlite3_exec(c.db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(c.db);
      sqlite3_free(err);
      throw StoreError("results database " + db_path + ": the dump does not load: " + msg);
    }
  }
  sqlite3_close(open_results_database(db_path, Journal::kRollback));
}

}  // namespace cedar
