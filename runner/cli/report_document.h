#pragma once
// `cedar report --document FILE`: the whole report as one markdown document, its plots and the
// results dump beside it; and `cedar report --regenerate FILE`, which writes it again from that
// dump. No LibTorch here.
#include <string>
#include <vector>

#include "reports/comparison.h"
#include "runner/cli/commands.h"

namespace cedar {

// Where a document goes and how it is made.
struct DocumentOutput {
  std::string path;      // the document written (its plots in <stem>-plots/ beside it)
  std::string shown_db;  // the results database its commands name
  bool render = true;    // run gnuplot on the plots (else their data and scripts only)
  bool dump = true;      // also write the results dump beside `path`
  bool print = true;     // also print the tables (as cedar report does without --document)
};

// The output of `cedar report --document`: the document where args.document says, its commands
// naming args.db (results/<name>.db when outside the repository).
DocumentOutput document_output(const ReportArgs& args);

// Writes the document of the report on args.db, with the comparison table and claims' verdicts
// already rendered.
void write_document(const ReportArgs& args, const DocumentOutput& out,
                    const std::vector<ComparisonRow>& rows, const std::string& comparison,
                    const std::string& claims);

// `cedar report --regenerate DOC [--output-dir DIR]`: loads the dump beside DOC into a temporary
// database and writes DOC (into DIR when given, without rendering plots) with the arguments DOC
// records. `report` runs the report on the arguments it is given.
int regenerate_document(const ReportArgs& args,
                        int (*report)(const ReportArgs&, const DocumentOutput&));

// The crossover section, its plot written into `plot_dir` ("" for none).
std::string crossover_section(const ReportArgs& args, const std::string& plot_dir,
                              bool render = true);

}  // namespace cedar
