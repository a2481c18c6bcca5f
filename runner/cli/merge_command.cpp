// `cedar merge DB`: folds the closed shards of a database into it (results/merge.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

#include "results/merge.h"
#include "results/results_mode.h"
#include "runner/cli/commands.h"

namespace cedar {
namespace {

MergeOptions merge_options(const std::string& db, const std::string& results_mode) {
  MergeOptions options;
  options.journal = resolve_results_mode(results_mode, db).mode == ResultsMode::kWal
                        ? Journal::kWal
                        : Journal::kRollback;
  return options;
}

void print_merge(const std::string& db, const MergeResult& result, std::FILE* out) {
  for (const std::string& refused : result.refused)
    std::fprintf(stderr, "cedar merge: refused %s\n", refused.c_str());
  std::fprintf(out, "%s: %s\n", db.c_str(), describe_merge(result).c_str());
  std::fflush(out);
}

}  // namespace

void merge_if_sharded(const std::string& db, const std::string& results_mode, std::FILE* out) {
  if (list_shards(db).empty()) return;
  print_merge(db, merge_shards(db, merge_options(db, results_mode)), out);
}

int command_merge(const MergeArgs& args) {
  // A mistyped path must not read as "merged 0 shard(s)": nothing to merge into is an error.
  std::error_code ec;
  if (!std::filesystem::exists(args.db, ec) && list_shards(args.db).empty()) {
    std::fprintf(stderr, "cedar merge: %s: no such database and no shards of it\n",
                 args.db.c_str());
    return 2;
  }
  MergeOptions options = merge_options(args.db, args.results_mode);
  options.wait_seconds = args.wait_seconds;
  options.shard_stale_seconds = args.stale_seconds;
  const MergeResult result = merge_shards(args.db, options);
  print_merge(args.db, result, stdout);
  if (result.lock_timeout) return 4;
  return result.refused.empty() ? 0 : 2;
}

void add_merge_command(CLI::App& app, Subcommands& out) {
  auto merge_args = std::make_shared<MergeArgs>();
  auto* merge = app.add_subcommand(
      "merge",
      "fold the closed shards of a database (<db>.shards/, written in results mode shards) into "
      "it: one transaction per shard, idempotent, one merge at a time across hosts");
  merge->add_option("db", merge_args->db, "results database")->required();
  merge
      ->add_option("--results-mode", merge_args->results_mode,
                   "auto, wal or shards: the journal the main database is written through")
      ->check(CLI::IsMember({"auto", "wal", "shards"}))
      ->capture_default_str();
  merge
      ->add_option("--wait", merge_args->wait_seconds,
                   "seconds to wait while another merge holds the lock")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  merge
      ->add_option("--stale-seconds", merge_args->stale_seconds,
                   "a shard whose writer on another host has not refreshed its lock for this "
                   "long is closed (on this host: when its process is gone)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  out.push_back({merge, [merge_args] { return command_merge(*merge_args); }});
}

}  // namespace cedar
