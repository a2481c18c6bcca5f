// `cedar export DB --runs|--steps|--evals`: one table as CSV or JSON lines
// (results/export_table.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "platform/atomic_file.h"
#include "results/export_table.h"
#include "runner/cli/commands.h"

namespace cedar {
namespace {

struct ExportArgs {
  std::string db;
  bool runs = false, steps = false, evals = false;
  std::string suite;
  std::string format = "csv";
  std::string output;  // a file (empty: stdout)
};

int command_export(const ExportArgs& args) {
  const int tables = int(args.runs) + int(args.steps) + int(args.evals);
  if (tables != 1) {
    std::fprintf(stderr, "cedar export: name one table: --runs, --steps or --evals\n");
    return 2;
  }
  const std::string table = args.runs ? "runs" : args.steps ? "steps" : "evals";
  const ExportFormat format = args.format == "jsonl" ? ExportFormat::kJsonl : ExportFormat::kCsv;
  if (args.output.empty()) {
    export_table(args.db, table, args.suite, format, std::cout);
    std::cout.flush();
    return std::cout ? 0 : 1;
  }
  // Written beside the target, then renamed: a failed export leaves no half-written file.
  const std::string tmp = args.output + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) {
      std::fprintf(stderr, "cedar export: cannot write %s\n", tmp.c_str());
      return 2;
    }
    try {
      export_table(args.db, table, args.suite, format, out);
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      std::fprintf(stderr, "cedar export: cannot write %s\n", args.output.c_str());
      return 2;
    }
  }
  publish_file(tmp, args.output);
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, Subcommands& out) {
  auto args = std::make_shared<ExportArgs>();
  auto* command = app.add_subcommand(
      "export",
      "one table of a results database as CSV or JSON lines (for pandas, R, jq): the runs, "
      "their steps or their evaluations; steps and evaluations name their run and seed");
  command->add_option("db", args->db, "results database")->required()->check(CLI::ExistingFile);
  command->add_flag("--runs", args->runs, "the runs table: one row per run");
  command->add_flag("--steps", args->steps, "one row per training step of every run");
  command->add_flag("--evals", args->evals, "one row per evaluation of every run");
  command->add_option("--suite", args->suite, "only this suite's runs");
  command->add_option("--format", args->format, "csv or jsonl")
      ->check(CLI::IsMember({"csv", "jsonl"}))
      ->capture_default_str();
  command->add_option("-o,--output", args->output, "write to this file (default: stdout)");
  out.push_back({command, [args] { return command_export(*args); }});
}

}  // namespace cedar
