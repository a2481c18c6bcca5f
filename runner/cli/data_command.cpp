// `cedar data list` and `cedar data fetch NAME`: the data sets cedar can download
// (datasets/fetch/catalog.h) and fetching one into the data root (datasets/fetch/fetch.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "datasets/fetch/catalog.h"
#include "datasets/fetch/fetch.h"
#include "runner/cli/commands.h"
#include "runner/train/run_guard.h"

namespace cedar {
namespace {

std::string checks(const DataSource& s) {
  bool md5 = false, sha256 = false, first = false;
  for (const auto& f : s.files)
    for (const auto& c : f.checksums) {
      md5 = md5 || c.kind == HashKind::kMd5;
      sha256 = sha256 || c.kind == HashKind::kSha256;
      first = first || c.kind == HashKind::kMd5FirstMib;
    }
  std::string out = "size";
  if (md5) out += ", md5";
  if (sha256) out += ", sha256";
  if (first) out += ", md5 of the first MiB (fastai's check)";
  return out;
}

std::string status_text(const DataStatus& st) {
  std::string out = st.state == DataStatus::kFetched    ? "fetched"
                    : st.state == DataStatus::kUnmarked ? "present, not fetched by cedar"
                                                        : "missing";
  if (st.part_bytes > 0) out += " (" + format_bytes(st.part_bytes) + " downloaded, resumable)";
  return out;
}

std::string how_to_read(const DataSource& s, const std::string& dir) {
  if (s.dataset.empty()) return "";
  return "data.name: " + s.dataset + ", data.root: " + dir;
}

}  // namespace

int command_data_list(const DataArgs& args) {
  const auto catalog = data_catalog();
  std::printf(
      "data sets `cedar data fetch NAME` downloads into %s/ (name, size, status, folder):\n",
      args.root.c_str());
  for (const auto& s : catalog) {
    const std::string dir = data_dir(s, args.root);
    std::printf("\n  %-15s %9s  %-9s %s\n", s.name.c_str(), format_bytes(s.total_size()).c_str(),
                status_text(data_status(s, args.root)).c_str(), dir.c_str());
    std::printf("  %-15s %s\n", "", s.description.c_str());
    std::printf("  %-15s checked by %s; read with %s\n", "", checks(s).c_str(),
                how_to_read(s, dir).c_str());
  }
  const char* override_file = std::getenv("CEDAR_DATA_CATALOG");
  if (override_file != nullptr && *override_file != '\0')
    std::printf("\nURLs and checksums from CEDAR_DATA_CATALOG=%s applied over the built-in ones\n",
                override_file);
  return 0;
}

int command_data_fetch(const DataArgs& args) {
  const auto catalog = data_catalog();
  const DataSource& source = find_data_source(catalog, args.name);
  FetchOptions options;
  options.root = args.root;
  options.from = args.from;
  options.mirror = args.mirror;
  options.say = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  options.should_stop = [] { return stop_signal() != 0; };
  const FetchResult r = fetch_data(source, options);
  if (r.outcome == FetchOutcome::kInstalled && !source.dataset.empty())
    std::printf("%s: read it with %s\n", source.name.c_str(), how_to_read(source, r.dir).c_str());
  return 0;
}

void add_data_commands(CLI::App& app, Subcommands& out) {
  auto data_args = std::make_shared<DataArgs>();
  auto* data = app.add_subcommand("data", "the data sets cedar can download: list, fetch");
  data->require_subcommand(1);
  auto* data_list = data->add_subcommand(
      "list", "every data set cedar can fetch: what it is, its size, where it goes, if present");
  data_list->add_option("--root", data_args->root, "data root")->capture_default_str();
  auto* data_fetch = data->add_subcommand(
      "fetch",
      "download a data set, verify its checksums and unpack it under the data root (nothing to "
      "do when it is already there)");
  data_fetch->add_option("name", data_args->name, "data set (cedar data list)")->required();
  data_fetch->add_option("--root", data_args->root, "data root")->capture_default_str();
  data_fetch->add_option("--from", data_args->from,
                         "the archive already downloaded (a path or URL; for several files a "
                         "folder or base URL holding them), verified the same way");
  data_fetch
      ->add_option("--mirror", data_args->mirror,
                   "base URL replacing the official ones: files at <mirror>/<name>/<file>")
      ->envname("CEDAR_DATA_MIRROR");
  out.push_back({data_list, [data_args] { return command_data_list(*data_args); }});
  out.push_back({data_fetch, [data_args] { return command_data_fetch(*data_args); }});
}

}  // namespace cedar
