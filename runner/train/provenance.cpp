#include "runner/train/provenance.h"

#include <torch/version.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "comm/library_versions.h"
#include "runner/source_revision.h"

namespace cedar {
namespace {

std::string g_command_line;

// Shell-quotes one argument where it holds anything but plain characters.
std::string quoted(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+@%") == std::string::npos)
    return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "";
}

}  // namespace

void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) g_command_line += (i ? " " : "") + quoted(argv[i]);
}

const std::string& command_line() { return g_command_line; }

std::string collect_provenance(int threads, int gpu_device) {
  nlohmann::ordered_json j;
  j["command"] = g_command_line;
  j["revision"] = source_version();
  j["commit"] = std::string(kSourceCommit);
  j["diff"] = std::string(kSourceDiff);
  j["torch"] = TORCH_VERSION;
  j["mpi"] = mpi_library_version();
  j["nccl"] = nccl_library_version();
  j["cuda"] = cuda_versions();
  j["cpu"] = cpu_model();
  j["cpu_count"] = std::thread::hardware_concurrency();
  j["threads_per_rank"] = threads;
  j["gpu"] = gpu_device >= 0 ? cuda_device_name(gpu_device) : "";
  // Set by `cedar suite` for a run on the virtual cluster: its hosts, rate, burst and qdisc.
  if (const char* links = std::getenv("CEDAR_CLUSTER_LINKS")) {
    nlohmann::json l = nlohmann::json::parse(links, nullptr, /*allow_exceptions=*/false);
    if (l.is_object()) j["links"] = l;
  }
  return j.dump();
}

}  // namespace cedar
