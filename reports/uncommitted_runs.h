#pragma once
// Runs built from a tree with uncommitted changes (runs.code_version ending in "-dirty", and the
// SHA-256 of those changes in the provenance's "diff", runner/source_revision.h): the reports
// mark the rows that hold one and name each such run's revision and diff hash under the table, so
// that no number is read as the output of the commit alone. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

#include "reports/comparison.h"

namespace cedar {

struct UncommittedRun {
  int64_t id = 0, seed = 0, world_size = 1;
  std::string name, model, dataset;
  std::string revision;  // runs.code_version
  std::string diff;      // SHA-256 of the changes; "" for a run written before it was recorded
};

// The mark beside a row that holds such a run.
inline constexpr const char* kUncommittedMark = "†";

// True for a run whose code version or diff hash (the provenance's "diff") says it was built with
// uncommitted changes.
bool built_uncommitted(const std::string& code_version, const std::string& diff);
// The provenance JSON's "diff", "" when absent.
std::string diff_of_provenance(const std::string& provenance_json);

// The runs of `suite` (all suites when empty) that the reports show, the latest finished one of
// each name and seed, that were built with uncommitted changes; in run order.
std::vector<UncommittedRun> load_uncommitted_runs(const std::string& db_path,
                                                  const std::string& suite);

// render_markdown(rows) with kUncommittedMark after the run count of each row that holds one of
// `runs`, and under it a note naming each of them: id, name, seed, revision and diff hash.
std::string render_markdown_marked(const std::vector<ComparisonRow>& rows,
                                   const std::vector<UncommittedRun>& runs);
// render_latex(rows) with those rows' names marked and the note under the tabular.
std::string render_latex_marked(const std::vector<ComparisonRow>& rows,
                                const std::vector<UncommittedRun>& runs);

}  // namespace cedar
