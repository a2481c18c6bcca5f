// `cedar trace summary FILE...`: each phase's time in the timelines train.trace wrote, and the
// share of the exchange that ran while backward was still running
// (runner/train/timeline_summary.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runner/cli/commands.h"
#include "runner/train/timeline_summary.h"

namespace cedar {
namespace {

int command_trace_summary(const std::vector<std::string>& files) {
  std::vector<TimelineEvent> events;
  for (const std::string& file : files) {
    std::vector<TimelineEvent> more = read_timeline(file);
    events.insert(events.end(), more.begin(), more.end());
  }
  std::fputs(format_timeline_summary(summarize_timeline(events)).c_str(), stdout);
  return 0;
}

}  // namespace

void add_trace_commands(CLI::App& app, Subcommands& out) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* trace = app.add_subcommand("trace", "the step timelines written with train.trace");
  trace->require_subcommand(1);
  auto* summary = trace->add_subcommand(
      "summary",
      "each phase's total and per-step time (forward, backward, exchange, optimizer, ...) and the "
      "hidden exchange share: per traced step, the part of the buckets' exchange time that ran "
      "while backward was still running, divided by that time; its median over the steps");
  summary->add_option("files", *files, "trace files (one per rank; several are summed)")
      ->required()
      ->check(CLI::ExistingFile);
  out.push_back({summary, [files] { return command_trace_summary(*files); }});
}

}  // namespace cedar
