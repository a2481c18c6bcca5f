#include "reports/comparison.h"

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "comm/network_model.h"
#include "reports/byte_ratios.h"
#include "reports/gap_rounds.h"
#include "reports/number_format.h"
#include "reports/precision.h"
#include "reports/provenance_table.h"
#include "reports/throughput.h"
#include "results/run_queries.h"

namespace cedar {
namespace {

const char* const kBytesLegend =
    "Payload: what a rank contributes to its collectives; bus: what it pushes through its link "
    "(nccl-tests factors). Payload compression = dense fp32 payload ÷ the run's payload (the "
    "papers' definition); wire ratio = dense SGD's bus bytes at the same ranks (ring allreduce) ÷ "
    "the run's bus bytes (what the network carries). Evaluation of the averaged model is "
    "bookkeeping, not counted. A parameter server (ps) has no bytes, ratios or modeled seconds "
    "here (–): its ranks are servers and workers that send different traffic, and its step rows "
    "count applied updates, not rounds; `cedar project` gives its pushes and replies per gradient "
    "on the servers' links. Its Δ vs dense is against dense SGD on as many ranks as it has "
    "workers.";
const char* const kThroughputLegend =
    "img/s/rank: training throughput of one rank, the images it trained on ÷ the wall-clock of "
    "those steps (evaluations left out), median over epochs, mean over the seeds the time columns "
    "use.";

// Training images per second on one rank; "–" when unknown.
std::string rate(const ComparisonRow& r) {
  return r.images_per_second > 0 ? fmt("%.0f", r.images_per_second) : "–";
}

// A parameter server's rows leave out what would mean something else on them (kBytesLegend).
std::string ps_dash(const ComparisonRow& r, const char* f, double v) {
  return r.algorithm == "ps" ? "–" : fmt(f, v);
}

// The ranks; a parameter server's as world size (workers + servers).
std::string ranks(const ComparisonRow& r) {
  if (r.workers <= 0 || r.workers >= r.world_size) return std::to_string(r.world_size);
  return std::to_string(r.world_size) + " (" + std::to_string(r.workers) + " + " +
         std::to_string(r.world_size - r.workers) + " srv)";
}

// Which seeds each row's time columns come from, where any run recorded its hosts' load.
std::string timing_note(const std::vector<ComparisonRow>& rows) {
  std::vector<TimedArm> arms;
  bool recorded = false;
  for (const auto& r : rows) {
    if (r.completed == 0) continue;
    recorded = recorded || r.load_recorded;
    arms.push_back({r.name, r.completed, r.timed_runs, r.timed_beside_other_work});
  }
  const std::string note = timing_sources_note(
      "Time columns (wall s, img/s/rank, modeled s) are means over", arms, recorded);
  return note.empty() ? "" : " " + note;
}

std::string pct(double mean, double sd, int n) {
  std::string s = fmt("%.2f", 100 * mean);
  if (n > 1) s += " ± " + fmt("%.2f", 100 * sd);
  return s;
}

}  // namespace

std::vector<RunResult> load_runs(const std::string& db_path, const std::string& suite,
                                 double target) {
  ResultsReader db(db_path);
  std::vector<RunResult> out;
  for (const RunTotals& t : read_run_totals(db, suite, target)) {
    RunResult r;
    r.id = t.run.id;
    r.suite = t.run.suite;
    r.name = t.run.name;
    r.algorithm = t.run.algorithm;
    r.model = t.run.model;
    r.dataset = t.run.dataset;
    r.status = t.run.status;
    r.world_size = t.run.world_size;
    r.seed = t.run.seed;
    r.final_accuracy = t.run.final_test_accuracy.value_or(0);
    r.best_accuracy = t.run.best_test_accuracy.value_or(0);
    r.wall_seconds = t.run.wall_seconds.value_or(0);
    r.steps = t.steps;
    r.payload_bytes_per_rank = t.payload_bytes_all / std::max<int64_t>(1, r.world_size);
    r.bus_bytes = t.bus_bytes;
    r.dense_bytes_per_rank = t.dense_bytes;
    r.compute_seconds = t.compute_seconds;
    r.latency_steps = t.latency_steps;
    r.time_to_target = t.seconds_to_target.value_or(-1);
    r.workers = t.run.workers.value_or(t.run.world_size);
    r.amp = amp_of(t.run.config);
    r.images_per_second = training_images_per_second(db, r.id, batch_size_of(t.run.config));
    r.median_step_seconds = median_step_seconds(db, r.id);
    r.other_load = other_load_of(t.run.provenance.value_or(""));
    const GapResult gap = read_gap_result(db, r.id, r.workers);
    if (gap.has_gap) {
      r.final_gap = gap.final_gap;
      r.rounds_to_gap = gap.rounds_to_gap;
    }
    out.push_back(std::move(r));
  }
  return out;
}

double modeled_seconds_on(const ComparisonRow& r, const std::string& profile) {
  const auto& profiles = network_profiles();
  for (size_t p = 0; p < profiles.size() && p < r.modeled_seconds.size(); ++p)
    if (profiles[p].name == profile) return r.modeled_seconds[p];
  return 0;
}

std::vector<ComparisonRow> compare_runs(const std::vector<RunResult>& runs, double target) {
  std::vector<ComparisonRow> rows;
  std::map<std::string, std::vector<const RunResult*>> groups;
  std::vector<std::string> order;
  for (const auto& r : runs) {
    std::string key =
        r.name + "\x1f" + r.model + "\x1f" + r.dataset + "\x1f" + std::to_string(r.world_size);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  for (const auto& key : order) {
    const auto& g = groups[key];
    ComparisonRow row;
    row.name = g[0]->name;
    row.algorithm = g[0]->algorithm;
    row.model = g[0]->model;
    row.dataset = g[0]->dataset;
    row.world_size = g[0]->world_size;
    row.workers = g[0]->workers;
    row.amp = g[0]->amp;
    row.runs = static_cast<int>(g.size());
    row.target = target;
    double ttt = 0;
    std::map<std::string, int> status_count;
    double sum = 0, sum2 = 0, best = 0, wall = 0, payload = 0, bus = 0, dense = 0, rate = 0;
    int rated = 0, timed_reached = 0;
    const auto& profiles = network_profiles();
    row.modeled_seconds.assign(profiles.size(), 0.0);
    // The time columns from the completed seeds timed on a quiet host, where there are any.
    bool any_quiet = false;
    for (const auto* r : g) {
      if (r->status != "completed") continue;
      any_quiet = any_quiet || timed_on_quiet_host(r->other_load);
      row.load_recorded = row.load_recorded || r->other_load >= 0;
    }
    for (const auto* r : g) {
      ++status_count[r->status];
      if (r->status != "completed") continue;
      ++row.completed;
      sum += r->final_accuracy;
      sum2 += r->final_accuracy * r->final_accuracy;
      best += r->best_accuracy;
      const bool timed = !any_quiet || timed_on_quiet_host(r->other_load);
      if (timed) {
        ++row.timed_runs;
        if (r->other_load > kQuietMachineShare) row.timed_beside_other_work = true;
        wall += r->wall_seconds;
      }
      payload += double(r->payload_bytes_per_rank);
      bus += double(r->bus_bytes);
      dense += double(r->dense_bytes_per_rank);
      if (timed && r->images_per_second > 0) {
        rate += r->images_per_second;
        ++rated;
      }
      if (r->time_to_target >= 0) {
        ++row.reached_target;
        if (timed) {
          ++timed_reached;
          ttt += r->time_to_target;
        }
      }
      SeedRun one{r->seed, r->final_accuracy, r->best_accuracy, r->wall_seconds,       0, 0,
                  {},      r->final_gap,      r->rounds_to_gap, r->median_step_seconds};
      if (row.algorithm != "ps") {  // as for the row's ratios below
        one.payload_compression =
            payload_compression(double(r->dense_bytes_per_rank), double(r->payload_bytes_per_rank));
        one.wire_ratio = wire_ratio(double(r->dense_bytes_per_rank), double(r->bus_bytes),
                                    static_cast<int>(r->world_size));
      }
      for (size_t p = 0; p < profiles.size(); ++p) {
        one.modeled_seconds.push_back(r->compute_seconds +
                                      profiles[p].seconds(r->latency_steps, r->bus_bytes));
        if (timed) row.modeled_seconds[p] += one.modeled_seconds.back();
      }
      row.seed_runs.push_back(std::move(one));
    }
    for (auto& m : row.modeled_seconds) m /= std::max(1, row.timed_runs);
    if (timed_reached > 0) row.time_to_target = ttt / timed_reached;
    int n = std::max(1, row.completed);
    row.final_mean = sum / n;
    row.final_std = row.completed > 1
                        ? std::sqrt(std::max(0.0, (sum2 - sum * sum / n) / (row.completed - 1)))
                        : 0;
    row.best_mean = best / n;
    row.wall_mean = wall / std::max(1, row.timed_runs);
    row.images_per_second = rated > 0 ? rate / rated : 0;
    row.payload_mb = payload / n / 1e6;
    row.bus_mb = bus / n / 1e6;
    // A parameter server's mean over ranks mixes servers and workers, and its dense reference
    // counts applied updates, not rounds: neither ratio would mean what it means for the others.
    const bool comparable = row.algorithm != "ps";
    row.payload_compression = comparable ? payload_compression(dense, payload) : 0;
    row.wire_ratio = comparable ? wire_ratio(dense, bus, static_cast<int>(row.world_size)) : 0;
    for (const auto& [status, count] : status_count)
      row.statuses += (row.statuses.empty() ? "" : ", ") + std::to_string(count) + " " + status;
    rows.push_back(row);
  }
  const std::vector<ComparisonRow> measured = rows;
  for (auto& row : rows) {
    // A row without a completed run has no accuracy to compare (its status column says why).
    const ComparisonRow* base = row.completed > 0 ? dense_baseline_row(measured, row) : nullptr;
    if (!base) continue;
    row.has_dense = true;
    row.gap_to_dense = row.final_mean - base->final_mean;
    if (row.time_to_target > 0 && base->time_to_target > 0)
      row.target_speedup = base->time_to_target / row.time_to_target;
  }
  return rows;
}

const ComparisonRow* dense_baseline_row(const std::vector<ComparisonRow>& rows,
                                        const ComparisonRow& r) {
  const ComparisonRow* first = nullptr;
  for (const auto& b : rows) {
    if (b.algorithm != "dense" || b.completed == 0 || b.model != r.model ||
        b.dataset != r.dataset || b.world_size != (r.workers > 0 ? r.workers : r.world_size))
      continue;
    if (b.name == "dense") return &b;
    if (!first) first = &b;
  }
  return first;
}

std::string render_markdown(const std::vector<ComparisonRow>& rows) {
  std::ostringstream s;
  s << "| run | algorithm | model | dataset | ranks | final acc % | best acc % | Δ vs dense | "
       "wall s | img/s/rank | payload MB/rank | bus MB/rank | payload compression | wire ratio | "
       "modeled s 1/10/100 GbE | ";
  const bool target = !rows.empty() && rows[0].target > 0;
  if (target) s << "time to " << fmt("%g", 100 * rows[0].target) << "% s (speed-up) | ";
  s << "runs |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";
  if (target) s << "---:|";
  s << "---|\n";
  for (const auto& r : rows) {
    s << "| " << r.name << " | " << r.algorithm << " | " << r.model << " | " << r.dataset << " | "
      << ranks(r) << " | " << pct(r.final_mean, r.final_std, r.completed) << " | "
      << fmt("%.2f", 100 * r.best_mean) << " | "
      << (r.has_dense ? fmt("%+.2f", 100 * r.gap_to_dense) : "–") << " | "
      << fmt("%.1f", r.wall_mean) << " | " << rate(r) << " | " << ps_dash(r, "%.3f", r.payload_mb)
      << " | " << ps_dash(r, "%.3f", r.bus_mb) << " | "
      << (r.payload_compression > 0 ? fmt("%.1f×", r.payload_compression) : "–") << " | "
      << (r.wire_ratio > 0 ? fmt("%.2f×", r.wire_ratio) : "–") << " | "
      << ps_dash(r, "%.1f", modeled_seconds_on(r, "1gbe")) << " / "
      << ps_dash(r, "%.1f", modeled_seconds_on(r, "10gbe")) << " / "
      << ps_dash(r, "%.1f", modeled_seconds_on(r, "100gbe")) << " | ";
    if (target) {
      if (r.time_to_target < 0)
        s << "not reached | ";
      else
        s << fmt("%.1f", r.time_to_target)
          << (r.target_speedup > 0 ? " (" + fmt("%.2f×", r.target_speedup) + ")" : "") << " | ";
    }
    s << r.statuses << " |\n";
  }
  s << "\n" << kBytesLegend << " " << kThroughputLegend << timing_note(rows) << "\n";
  std::vector<std::pair<std::string, std::string>> amp;
  for (const auto& r : rows) amp.emplace_back(r.name, r.amp);
  const std::string precision = precision_legend(amp);
  if (!precision.empty()) s << "\n" << precision << "\n";
  return s.str();
}

std::string render_csv(const std::vector<ComparisonRow>& rows) {
  std::ostringstream s;
  s << "run,algorithm,model,dataset,ranks,final_acc_mean,final_acc_std,best_acc_mean,gap_to_dense,"
       "wall_seconds,payload_mb_per_rank,bus_mb_per_rank,payload_compression,wire_ratio,"
       "completed,runs";
  for (const auto& p : network_profiles()) s << ",modeled_seconds_" << p.name;
  s << ",time_to_target_s,target_speedup,train_img_per_s_per_rank\n";
  for (const auto& r : rows) {
    s << r.name << "," << r.algorithm << "," << r.model << "," << r.dataset << "," << r.world_size
      << "," << fmt("%.6f", r.final_mean) << "," << fmt("%.6f", r.final_std) << ","
      << fmt("%.6f", r.best_mean) << "," << (r.has_dense ? fmt("%.6f", r.gap_to_dense) : "") << ","
      << fmt("%.3f", r.wall_mean) << "," << fmt("%.6f", r.payload_mb) << ","
      << fmt("%.6f", r.bus_mb) << "," << fmt("%.3f", r.payload_compression) << ","
      << fmt("%.3f", r.wire_ratio) << "," << r.completed << "," << r.runs;
    for (double m : r.modeled_seconds) s << "," << fmt("%.3f", m);
    s << "," << (r.time_to_target >= 0 ? fmt("%.3f", r.time_to_target) : "") << ","
      << (r.target_speedup > 0 ? fmt("%.3f", r.target_speedup) : "") << ","
      << (r.images_per_second > 0 ? fmt("%.1f", r.images_per_second) : "") << "\n";
  }
  return s.str();
}

std::string render_latex(const std::vector<ComparisonRow>& rows) {
  auto esc = [](std::string t) {
    std::string o;
    for (char c : t) {
      if (c == '_' || c == '%' || c == '&' || c == '#') o += '\\';
      o += c;
    }
    return o;
  };
  std::ostringstream s;
  s << "\\begin{tabular}{lllrrrrrrrr}\n\\hline\n"
       "Run & Model & Dataset & Ranks & Final acc.\\ (\\%) & $\\Delta$ vs dense & Wall (s) & "
       "Img/s/rank & "
       "Payload (MB/rank) & Payload compr. & Wire ratio \\\\\n\\hline\n";
  for (const auto& r : rows) {
    std::string acc = fmt("%.2f", 100 * r.final_mean);
    if (r.completed > 1) acc += " $\\pm$ " + fmt("%.2f", 100 * r.final_std);
    s << esc(r.name) << " & " << esc(r.model) << " & " << esc(r.dataset) << " & " << r.world_size
      << " & " << acc << " & " << (r.has_dense ? fmt("%+.2f", 100 * r.gap_to_dense) : "--") << " & "
      << fmt("%.1f", r.wall_mean) << " & "
      << (r.images_per_second > 0 ? fmt("%.0f", r.images_per_second) : "--") << " & "
      << fmt("%.3f", r.payload_mb) << " & "
      << (r.payload_compression > 0 ? fmt("%.1f$\\times$", r.payload_compression) : "--") << " & "
      << (r.wire_ratio > 0 ? fmt("%.2f$\\times$", r.wire_ratio) : "--") << " \\\\\n";
  }
  s << "\\hline\n\\end{tabular}\n";
  return s.str();
}

}  // namespace cedar
