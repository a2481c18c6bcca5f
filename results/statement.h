#pragma once
// Internal to results/: a prepared SQLite statement that finalizes itself, for the store's writes
// and the typed read queries (results/run_queries.h and its siblings).
// reports/ and runner/ never include it (scripts/check_layers.py).
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/store.h"

namespace cedar {

class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, double v) {
    check(sqlite3_bind_double(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  void run() {
    if (sqlite3_step(stmt_) != SQLITE_DONE) fail("write");
  }
  // Steps to the next row; false when there is none.
  bool next() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail("read");
    return false;
  }
  int64_t int_column(int i) const { return sqlite3_column_int64(stmt_, i); }
  double real_column(int i) const { return sqlite3_column_double(stmt_, i); }
  bool null_column(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  std::string text_column(int i) const {
    auto* p = sqlite3_column_text(stmt_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  // The column, or std::nullopt where it is NULL.
  std::optional<int64_t> optional_int_column(int i) const {
    if (null_column(i)) return std::nullopt;
    return int_column(i);
  }
  std::optional<double> optional_real_column(int i) const {
    if (null_column(i)) return std::nullopt;
    return real_column(i);
  }
  std::optional<std::string> optional_text_column(int i) const {
    if (null_column(i)) return std::nullopt;
    return text_column(i);
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail("bind");
  }
  [[noreturn]] void fail(const char* what) {
    throw StoreError("results database " + path_ + ": " + what + " failed: " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Every remaining row of `st`, each read by `read_row(st)`, in the order the query yields them.
template <class ReadRow>
auto read_rows(Statement& st, ReadRow read_row) {
  std::vector<decltype(read_row(st))> out;
  while (st.next()) out.push_back(read_row(st));
  return out;
}

}  // namespace cedar
