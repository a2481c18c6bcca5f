#pragma once
// One table of a results database as CSV or JSON lines, for pandas, R and jq (`cedar export`).
#include <ostream>
#include <string>

namespace cedar {

enum class ExportFormat { kCsv, kJsonl };

// Writes the rows of `table` ("runs", "steps" or "evals") of the database at `db_path` to `out`:
// the runs of `suite` only ("" for every run), in key order (runs by id; steps and evals by run,
// then step). The columns are the table's, in schema order; steps and evals rows start with
// their run's id, name and seed (run_id, run_name, seed), so that one file is enough to group
// them. CSV (RFC 4180): a header line, fields quoted where they hold a comma, a quote or a line
// break (a run's configuration and provenance do), NULL as an empty field, reals printed so that
// they read back to the same double (%.17g). JSON lines: one object per row, NULL as null.
// Throws StoreError naming the database when it cannot be opened or read, and
// std::invalid_argument for another table.
void export_table(const std::string& db_path, const std::string& table, const std::string& suite,
                  ExportFormat format, std::ostream& out);

}  // namespace cedar
