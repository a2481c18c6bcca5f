#include "results/results_reader.h"

#include <sqlite3.h>

#include "results/statement.h"
#include "results/store.h"

namespace cedar {

ResultsReader::ResultsReader(const std::string& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw StoreError("cannot open results database " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 60000);
  try {
    if (!has_table("runs"))
      throw StoreError(path + ": not a Cedar results database (no runs table)");
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

ResultsReader::~ResultsReader() { sqlite3_close(db_); }

bool ResultsReader::has_table(const std::string& name) {
  Statement st(db_, path_, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
  st.bind(1, name);
  return st.next() && st.int_column(0) > 0;
}

bool ResultsReader::has_column(const std::string& table, const std::string& column) {
  Statement st(db_, path_, "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2");
  st.bind(1, table).bind(2, column);
  return st.next() && st.int_column(0) > 0;
}

}  // namespace cedar
