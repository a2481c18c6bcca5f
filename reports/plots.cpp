#include "reports/plots.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

#include "reports/results_reader.h"

namespace cedar {
namespace {

struct Curve {
  // Per run name: per seed, the evaluation points in order.
  // seed -> [epoch, wall, payload MB, acc, bus MB] (rank 0, cumulative)
  std::map<int64_t, std::vector<std::vector<double>>> evals;
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> loss;  // seed -> (step, loss)
};

std::string file_name(const std::string& run) {
  std::string out;
  for (char c : run)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return out;
}

void make_dir(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!partial.empty()) mkdir(partial.c_str(), 0755);
    }
    if (i < dir.size()) partial += dir[i];
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error("cannot create plot folder " + dir);
}

// Completed runs only; the latest of each (name, seed).
const char* kLatest =
    "r.status = 'completed' AND (?1 = '' OR r.suite = ?1) AND r.id = (SELECT MAX(r2.id) FROM runs "
    "r2 "
    "WHERE r2.suite = r.suite AND r2.name = r.name AND r2.seed = r.seed AND r2.status = "
    "'completed')";

std::map<std::string, Curve> load(const std::string& db_path, const std::string& suite) {
  ResultsReader db(db_path);
  std::map<std::string, Curve> curves;
  std::string evals_sql =
      std::string(
          "SELECT r.name, r.seed, e.epoch, e.wall_seconds, e.cum_payload_bytes, e.test_accuracy, "
          "e.cum_bus_bytes FROM evals e JOIN runs r ON r.id = e.run_id WHERE ") +
      kLatest + " ORDER BY r.name, r.seed, e.step";
  sqlite3_stmt* st = db.prepare(evals_sql.c_str());
  sqlite3_bind_text(st, 1, suite.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string name = column_text(st, 0);
    curves[name].evals[sqlite3_column_int64(st, 1)].push_back(
        {sqlite3_column_double(st, 2), sqlite3_column_double(st, 3),
         sqlite3_column_double(st, 4) / 1e6, sqlite3_column_double(st, 5),
         sqlite3_column_double(st, 6) / 1e6});
  }
  sqlite3_finalize(st);
  std::string loss_sql = std::string(
                             "SELECT r.name, r.seed, s.step, s.train_loss FROM steps s JOIN runs r "
                             "ON r.id = s.run_id WHERE ") +
                         kLatest + " ORDER BY r.name, r.seed, s.step";
  st = db.prepare(loss_sql.c_str());
  sqlite3_bind_text(st, 1, suite.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string name = column_text(st, 0);
    curves[name].loss[sqlite3_column_int64(st, 1)].push_back(
        {sqlite3_column_int64(st, 2), sqlite3_column_double(st, 3)});
  }
  sqlite3_finalize(st);
  return curves;
}

// Evaluation i of every seed: means of epoch/wall/payload MB/accuracy, the accuracy's min and
// max, and the mean bus MB (columns 1-7).
void write_evals(const std::string& path, const Curve& c) {
  std::ofstream out(path);
  out << "# epoch\twall_s\tpayload_MB_rank0\ttest_acc_mean\ttest_acc_min\ttest_acc_max\t"
         "bus_MB_rank0\n";
  size_t n = SIZE_MAX;
  for (const auto& [seed, pts] : c.evals) n = std::min(n, pts.size());
  if (n == SIZE_MAX) return;
  for (size_t i = 0; i < n; ++i) {
    double sums[5] = {0, 0, 0, 0, 0}, lo = 1e9, hi = -1e9;
    for (const auto& [seed, pts] : c.evals) {
      for (int k = 0; k < 5; ++k) sums[k] += pts[i][k];
      lo = std::min(lo, pts[i][3]);
      hi = std::max(hi, pts[i][3]);
    }
    double m = static_cast<double>(c.evals.size());
    char line[256];
    std::snprintf(line, sizeof line, "%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", sums[0] / m,
                  sums[1] / m, sums[2] / m, 100 * sums[3] / m, 100 * lo, 100 * hi, sums[4] / m);
    out << line;
  }
}

// Training loss, mean over seeds, averaged over windows so each curve has at most 400 points.
void write_loss(const std::string& path, const Curve& c) {
  std::ofstream out(path);
  out << "# step\ttrain_loss_mean\n";
  size_t n = SIZE_MAX;
  for (const auto& [seed, pts] : c.loss) n = std::min(n, pts.size());
  if (n == SIZE_MAX || n == 0) return;
  size_t window = std::max<size_t>(1, n / 400);
  for (size_t start = 0; start + window <= n; start += window) {
    double sum = 0;
    for (const auto& [seed, pts] : c.loss)
      for (size_t i = start; i < start + window; ++i) sum += pts[i].second;
    char line[128];
    std::snprintf(line, sizeof line, "%lld\t%.6g\n",
                  static_cast<long long>(c.loss.begin()->second[start + window - 1].first),
                  sum / double(window * c.loss.size()));
    out << line;
  }
}

struct Figure {
  const char* name;
  const char* xlabel;
  const char* ylabel;
  const char* suffix;  // data file suffix
  int x, y;            // columns
  bool band, logx;
};

std::string script(const Figure& f, const std::string& title,
                   const std::vector<std::pair<std::string, std::string>>& series) {
  std::string s;
  s += "# " + std::string(f.name) + ": " + title + " (generated by cedar report --plots)\n";
  s += "set datafile separator '\\t'\nset key outside right\nset grid\n";
  s += std::string("set xlabel '") + f.xlabel + "'\nset ylabel '" + f.ylabel + "'\n";
  if (f.logx) s += "set logscale x\n";
  s += "set title '" + title + "'\n";
  std::string plot = "plot ";
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& [label, data] = series[i];
    // 8 colours, then the same colours dashed, so every curve stays distinct.
    std::string lt = std::to_string(i % 8 + 1) + " dt " + std::to_string(i / 8 + 1);
    if (f.band)
      plot += "'" + data + "' using " + std::to_string(f.x) + ":5:6 with filledcurves lc " +
              std::to_string(i % 8 + 1) + " fs transparent solid 0.15 notitle, ";
    plot += "'" + data + "' using " + std::to_string(f.x) + ":" + std::to_string(f.y) +
            (f.band ? " with linespoints pt 7 ps 0.5" : " with lines") + " lc " + lt + " title '" +
            label + "'";
    plot += i + 1 < series.size() ? ", " : "\n";
  }
  // noenhanced: titles and labels are drawn as written (a suite named parameter_server would
  // otherwise get a subscript).
  s += "set terminal svg size 900,500 dynamic noenhanced\nset output '" + std::string(f.name) +
       ".svg'\n" + plot;
  s += "set terminal pngcairo size 900,500 noenhanced\nset output '" + std::string(f.name) +
       ".png'\nreplot\n";
  return s;
}

}  // namespace

PlotOutput write_plots(const std::string& db_path, const std::string& suite, const std::string& dir,
                       bool render) {
  auto curves = load(db_path, suite);
  if (curves.empty())
    throw std::runtime_error(db_path + ": no completed runs to plot" +
                             (suite.empty() ? std::string() : " in suite '" + suite + "'"));
  make_dir(dir + "/data");
  std::vector<std::pair<std::string, std::string>> evals, losses;
  for (const auto& [name, c] : curves) {
    std::string base = "data/" + file_name(name);
    write_evals(dir + "/" + base + ".tsv", c);
    write_loss(dir + "/" + base + "_loss.tsv", c);
    evals.push_back({name, base + ".tsv"});
    losses.push_back({name, base + "_loss.tsv"});
  }
  const std::string title = suite.empty() ? std::string("all runs") : suite;
  const Figure figures[] = {
      {"accuracy_vs_time", "wall-clock (s)", "test accuracy (%)", "", 2, 4, true, false},
      {"accuracy_vs_bytes", "payload MB sent by rank 0 (what it contributes to collectives)",
       "test accuracy (%)", "", 3, 4, true, true},
      {"accuracy_vs_wire_bytes", "wire (bus) MB pushed by rank 0 (what the network carries)",
       "test accuracy (%)", "", 7, 4, true, true},
      {"accuracy_vs_epoch", "epoch", "test accuracy (%)", "", 1, 4, true, false},
      {"train_loss", "step", "training loss", "_loss", 1, 2, false, false},
  };
  PlotOutput out;
  for (const Figure& f : figures) {
    std::string path = dir + "/" + f.name + ".gp";
    std::ofstream(path) << script(f, title, std::string(f.suffix).empty() ? evals : losses);
    out.scripts.push_back(path);
    if (!render) continue;
    std::string cmd = "cd '" + dir + "' && gnuplot '" + std::string(f.name) + ".gp' 2>&1";
    int rc = std::system(cmd.c_str());
    if (rc != 0)
      throw std::runtime_error("gnuplot failed on " + path + " (is gnuplot-nox installed?)");
    out.images.push_back(dir + "/" + f.name + ".svg");
    out.images.push_back(dir + "/" + f.name + ".png");
  }
  return out;
}

}  // namespace cedar
