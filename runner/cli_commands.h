#pragma once
// The subcommands behind `cedar`. No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

struct RunArgs {
  std::string experiment;
  std::vector<std::string> overrides;
  std::string db = "results/cedar.db";
  bool quiet = false;
};

struct SuiteArgs {
  std::string experiment;
  std::vector<std::string> overrides;
  std::string db = "results/cedar.db";
  bool dry_run = false;
  bool quiet = false;
};

struct ReportArgs {
  std::string db;
  std::string suite;
  std::string format = "md";
  std::string plots;   // folder for plots (empty: none)
  std::string claims;  // experiment file whose claims: are evaluated (empty: none)
  double target = 0;   // test accuracy for the time-to-target column (0: none)
};

int command_run(const RunArgs& args);
int command_suite(const SuiteArgs& args);
int command_report(const ReportArgs& args);
int command_list();
std::string version_string();
// Ends the process with `code`; under MPI with several ranks it aborts the whole job so that no
// peer waits forever in a collective.
int fail_job(int code);

}  // namespace cedar
