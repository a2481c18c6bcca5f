#include "reports/uncommitted_runs.h"

#include <nlohmann/json.hpp>

#include "results/run_queries.h"

namespace cedar {
namespace {

bool holds(const ComparisonRow& row, const std::vector<UncommittedRun>& runs) {
  for (const auto& u : runs)
    if (u.name == row.name && u.model == row.model && u.dataset == row.dataset &&
        u.world_size == row.world_size)
      return true;
  return false;
}

// One line per run: "run 7, qsgd (seed 1): v1.2-3-gabc-dirty, changes sha256 <hash>".
std::vector<std::string> run_lines(const std::vector<UncommittedRun>& runs) {
  std::vector<std::string> lines;
  for (const auto& u : runs)
    lines.push_back("run " + std::to_string(u.id) + ", " + u.name + " (seed " +
                    std::to_string(u.seed) + "): " + u.revision + ", changes " +
                    (u.diff.empty() ? std::string("not recorded") : "sha256 " + u.diff));
  return lines;
}

const char* const kNoteLead =
    "built from a tree with uncommitted changes, not from its revision's commit alone";

}  // namespace

bool built_uncommitted(const std::string& code_version, const std::string& diff) {
  const std::string dirty = "-dirty";
  return !diff.empty() ||
         (code_version.size() >= dirty.size() &&
          code_version.compare(code_version.size() - dirty.size(), dirty.size(), dirty) == 0);
}

std::string diff_of_provenance(const std::string& provenance_json) {
  const nlohmann::json j = nlohmann::json::parse(provenance_json, nullptr, false);
  if (!j.is_object()) return "";
  auto it = j.find("diff");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<UncommittedRun> load_uncommitted_runs(const std::string& db_path,
                                                  const std::string& suite) {
  ResultsReader db(db_path);
  std::vector<UncommittedRun> out;
  for (const RunRow& run : read_shown_runs(db, suite)) {
    UncommittedRun u;
    u.id = run.id;
    u.name = run.name;
    u.seed = run.seed;
    u.world_size = run.world_size;
    u.model = run.model;
    u.dataset = run.dataset;
    u.revision = run.code_version;
    u.diff = diff_of_provenance(run.provenance.value_or(""));
    if (built_uncommitted(u.revision, u.diff)) out.push_back(std::move(u));
  }
  return out;
}

std::string render_markdown_marked(const std::vector<ComparisonRow>& rows,
                                   const std::vector<UncommittedRun>& runs) {
  if (runs.empty()) return render_markdown(rows);
  std::vector<ComparisonRow> marked = rows;
  for (auto& row : marked)
    if (holds(row, runs)) row.statuses += std::string(" ") + kUncommittedMark;
  std::string note = std::string("\n") + kUncommittedMark + " " + kNoteLead + ":\n";
  for (const auto& line : run_lines(runs)) note += "- " + line + "\n";
  return render_markdown(marked) + note;
}

std::string render_latex_marked(const std::vector<ComparisonRow>& rows,
                                const std::vector<UncommittedRun>& runs) {
  if (runs.empty()) return render_latex(rows);
  std::vector<ComparisonRow> marked = rows;
  for (auto& row : marked)
    if (holds(row, runs)) row.name += "$^\\dagger$";
  std::string note = std::string("\n$^\\dagger$ ") + kNoteLead + ": ";
  const auto lines = run_lines(runs);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) note += "; ";
    for (char c : lines[i]) {
      if (c == '_' || c == '%' || c == '&' || c == '#') note += '\\';
      note += c;
    }
  }
  return render_latex(marked) + note + ".\n";
}

}  // namespace cedar
