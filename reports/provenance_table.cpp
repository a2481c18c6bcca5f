#include "reports/provenance_table.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "reports/uncommitted_runs.h"
#include "results/run_queries.h"

namespace cedar {
namespace {

std::string text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// "virtual cluster 2x1, 1gbit full duplex per host (tbf, burst 256kb)" from the "links" object.
std::string links_text(const nlohmann::json& j) {
  auto it = j.find("links");
  if (it == j.end() || !it->is_object()) return "";
  const nlohmann::json& l = *it;
  auto num = [&](const char* k) {
    return l.contains(k) && l[k].is_number() ? std::to_string(l[k].get<int64_t>()) : "?";
  };
  return text(l, "cluster") + " cluster " + num("hosts") + "x" + num("ranks_per_host") + ", " +
         text(l, "rate") + " full duplex per host (" + text(l, "qdisc") + ", burst " +
         text(l, "burst") + ")";
}

std::string or_dash(const std::string& s) { return s.empty() ? "–" : s; }

// The revision, its commit, and a mark with the diff hash where it was built with uncommitted
// changes.
std::string revision_cell(const RunProvenance& r) {
  std::string cell = or_dash(r.revision);
  if (!r.commit.empty() && r.commit != "unknown") cell += " (" + r.commit + ")";
  if (built_uncommitted(r.revision, r.diff))
    cell += std::string(" ") + kUncommittedMark + " changes " +
            (r.diff.empty() ? std::string("not recorded") : "sha256 " + r.diff);
  return cell;
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

std::string load_note(const RunProvenance& r) {
  return r.other_load < 0
             ? std::string()
             : ", other processes used " + percent(r.other_load) + " of its host's CPU";
}

// Which runs were timed on a quiet machine: a referee's first question of any time figure.
std::string machine_load_summary(const std::vector<RunProvenance>& runs) {
  int known = 0;
  std::string loaded;
  for (const auto& r : runs) {
    if (r.other_load < 0) continue;
    ++known;
    if (r.other_load > kQuietMachineShare)
      loaded += (loaded.empty() ? "" : ", ") + r.name + " (seed " + std::to_string(r.seed) + ", " +
                percent(r.other_load) + ")";
  }
  const int unknown = static_cast<int>(runs.size()) - known;
  std::string s =
      "Machine load while training (other processes' share of a host's CPU time, "
      "runner/train/machine_load.h): ";
  if (known == 0) return s + "not recorded for any run.\n";
  s += loaded.empty()
           ? "every run with it recorded trained with other work under " +
                 percent(kQuietMachineShare) + "."
           : "timed beside other work (over " + percent(kQuietMachineShare) + "): " + loaded +
                 ". Their wall-clock and compute times include that "
                 "contention.";
  if (unknown > 0) s += " Not recorded for " + std::to_string(unknown) + " run(s).";
  return s + "\n";
}

}  // namespace

std::vector<RunProvenance> load_provenance(const std::string& db_path, const std::string& suite) {
  ResultsReader db(db_path);
  std::vector<RunProvenance> out;
  for (const RunRow& run : read_shown_runs(db, suite)) {
    RunProvenance p;
    p.id = run.id;
    p.name = run.name;
    p.seed = run.seed;
    p.status = run.status;
    p.host = run.host;
    p.revision = run.code_version;
    p.threads = run.threads;
    nlohmann::json j = nlohmann::json::parse(run.provenance.value_or(""), nullptr,
                                             /*allow_exceptions=*/false);
    if (j.is_object()) {
      p.recorded = true;
      p.command = text(j, "command");
      p.torch = text(j, "torch");
      p.mpi = text(j, "mpi");
      p.nccl = text(j, "nccl");
      p.cuda = text(j, "cuda");
      p.cpu = text(j, "cpu");
      p.gpu = text(j, "gpu");
      p.commit = text(j, "commit");
      p.diff = text(j, "diff");
      p.links = links_text(j);
      if (j.contains("cpu_count") && j["cpu_count"].is_number())
        p.cpu_count = j["cpu_count"].get<int64_t>();
      if (j.contains("threads_per_rank") && j["threads_per_rank"].is_number())
        p.threads = j["threads_per_rank"].get<int64_t>();
      p.other_load = other_load_of(*run.provenance);
    }
    out.push_back(std::move(p));
  }
  return out;
}

double other_load_of(const std::string& provenance_json) {
  const nlohmann::json j = nlohmann::json::parse(provenance_json, nullptr,
                                                 /*allow_exceptions=*/false);
  if (!j.is_object()) return -1;
  const auto load = j.find("machine_load");
  if (load == j.end() || !load->is_object() || !load->contains("max_other_share") ||
      !(*load)["max_other_share"].is_number())
    return -1;
  return (*load)["max_other_share"].get<double>();
}

std::string timing_sources_note(const std::string& lead, const std::vector<TimedArm>& arms,
                                bool recorded) {
  if (!recorded) return "";
  std::string partial, loaded;
  int full = 0;
  for (const auto& a : arms) {
    const std::string item =
        a.name + " (" + std::to_string(a.timed) + " of " + std::to_string(a.seeds) + ")";
    if (a.beside_other_work)
      loaded += (loaded.empty() ? "" : ", ") + item;
    else if (a.timed < a.seeds)
      partial += (partial.empty() ? "" : ", ") + item;
    else
      ++full;
  }
  std::string s = lead + " the seeds timed on a quiet host (other processes used at most " +
                  std::to_string(static_cast<int>(kQuietMachineShare * 100 + 0.5)) +
                  "% of its CPU)";
  if (partial.empty() && loaded.empty()) return s + ": every seed was.";
  if (!partial.empty())
    s += ": " + partial + (full ? "; every seed of the other runs" : "");
  else if (full)
    s += ": every seed of the other runs";
  if (!loaded.empty())
    s += "; no seed was quiet, so all of them, timed beside other work: " + loaded;
  return s + ".";
}

std::string render_provenance_markdown(const std::vector<RunProvenance>& runs) {
  // Environments in order of first appearance, each with the runs that used it.
  using Env = std::tuple<std::string, std::string, std::string, std::string, std::string,
                         std::string, std::string, int64_t, int64_t, std::string>;
  std::vector<Env> order;
  std::map<Env, std::vector<std::string>> members;
  for (const auto& r : runs) {
    Env e{revision_cell(r), r.host, r.torch,     r.mpi,     r.nccl,
          r.cuda,           r.cpu,  r.cpu_count, r.threads, r.gpu};
    if (!members.count(e)) order.push_back(e);
    members[e].push_back(r.name + " (seed " + std::to_string(r.seed) + ")");
  }
  std::ostringstream s;
  s << "| revision | host | LibTorch | MPI | NCCL | CUDA | CPU | cores | threads / rank | GPU | "
       "runs |\n";
  s << "|---|---|---|---|---|---|---|---:|---:|---|---|\n";
  for (const auto& e : order) {
    const auto& [rev, host, torch, mpi, nccl, cuda, cpu, cores, threads, gpu] = e;
    std::string list;
    for (const auto& m : members[e]) list += (list.empty() ? "" : ", ") + m;
    s << "| " << rev << " | " << or_dash(host) << " | " << or_dash(torch) << " | " << or_dash(mpi)
      << " | " << or_dash(nccl) << " | " << or_dash(cuda) << " | " << or_dash(cpu) << " | "
      << (cores ? std::to_string(cores) : "–") << " | " << threads << " | " << or_dash(gpu) << " | "
      << list << " |\n";
  }
  s << render_links_note(runs);
  s << "\n" << machine_load_summary(runs);
  s << "\nCommand of each run (what reproduces it alone):\n\n";
  for (const auto& r : runs)
    s << "- run " << r.id << ", " << r.name << " (seed " << r.seed << ", " << r.status
      << load_note(r)
      << "): " << (r.command.empty() ? std::string("not recorded") : "`" + r.command + "`") << "\n";
  return s.str();
}

std::string render_links_note(const std::vector<RunProvenance>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::string> members;
  for (const auto& r : runs) {
    if (r.links.empty()) continue;
    if (!members.count(r.links)) order.push_back(r.links);
    std::string& list = members[r.links];
    list += (list.empty() ? "" : ", ") + r.name + " (seed " + std::to_string(r.seed) + ")";
  }
  std::string s;
  for (const auto& l : order)
    s += "\nSeconds measured on shaped links: " + l + ": " + members[l] + "\n";
  return s;
}

}  // namespace cedar
