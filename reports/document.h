#pragma once
// A suite's report as one markdown document (`cedar report --document FILE`): what was run and
// how to run it again, the comparison table, the claims' verdicts and their history, when
// compression helps, the plots beside it, hand-written findings, and each run's provenance; the
// arguments it was made with in a comment, so that it can be regenerated from the results dump
// beside it (reports/document_arguments.h). No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

// When a suite's runs ran: the first start and last end (ISO 8601 UTC), and the sum of the runs'
// own wall-clock seconds.
struct SuiteTiming {
  std::string first_start, last_end;
  double run_seconds = 0;
  int runs = 0;
};
SuiteTiming load_suite_timing(const std::string& db_path, const std::string& suite);

// The leading comment block of an experiment file, without the '#' marks ("" when none).
std::string experiment_preamble(const std::string& path);

struct DocumentSections {
  std::string title;
  std::string arguments;        // the line recording how it was made (document_arguments.h)
  std::string experiment_file;  // its preamble describes the setting
  std::string commands;         // the commands that produce the runs and this document
  SuiteTiming timing;
  std::string comparison, claims, crossover, provenance;  // rendered markdown ("" to leave out)
  std::string hidden_exchange;     // reports/hidden_exchange.h ("" to leave out)
  std::string claims_notice;       // a line above the verdicts: claims changed after the runs
  std::string claim_history;       // reports/claim_history.h ("" to leave out)
  std::vector<std::string> plots;  // image paths relative to the document (SVG shown, PNG linked)
  std::string findings;            // hand-written markdown ("" to leave out)
};

std::string render_document(const DocumentSections& d);

}  // namespace cedar
