#pragma once
// docs/network_validation.md with the data it is written from beside it, and written again from
// that data: `cedar network validate --document` and `--regenerate` (reports/link_validation.h,
// reports/link_validation_arguments.h). No LibTorch here.
#include <string>

#include "reports/link_validation_arguments.h"

namespace cedar {

// Validates the databases and profiles `a` names, prints the tables, writes the document
// `a.document` with its plots, and dumps each database and copies each profile file into the data
// folder beside it.
void write_link_validation_with_data(const LinkValidationArguments& a, bool render);

// Writes `document` again from the dumps and profile copies beside it, with the arguments it
// records: over itself, or into `output_dir` (created) without running gnuplot.
void regenerate_link_validation(const std::string& document, const std::string& output_dir);

}  // namespace cedar
