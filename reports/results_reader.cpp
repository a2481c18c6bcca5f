#include "reports/results_reader.h"

#include <stdexcept>

namespace cedar {

ResultsReader::ResultsReader(const std::string& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open results database " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 60000);
}

ResultsReader::~ResultsReader() { sqlite3_close(db_); }

sqlite3_stmt* ResultsReader::prepare(const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK)
    throw std::runtime_error(path_ + ": not a Cedar results database (" + sqlite3_errmsg(db_) +
                             ")");
  return st;
}

std::string column_text(sqlite3_stmt* st, int i) {
  const unsigned char* t = sqlite3_column_text(st, i);
  return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
}

}  // namespace cedar
