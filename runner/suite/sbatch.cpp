#include "runner/suite/sbatch.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include "config/experiment_config.h"
#include "config/params.h"
#include "runner/suite/launcher.h"

namespace cedar {
namespace {

// Characters kept in file and job names; anything else becomes '_'.
std::string file_safe(const std::string& s) {
  std::string out;
  for (char c : s)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out.empty() ? "_" : out;
}

// #SBATCH lines are split at white space and --output expands %-patterns.
std::string sbatch_path(const std::string& what, const std::string& path) {
  if (path.find_first_of(" \t\n\r") != std::string::npos)
    throw std::invalid_argument(what + " '" + path +
                                "' contains white space, which a #SBATCH line cannot hold");
  return path;
}

std::string escape_percent(const std::string& path) {
  std::string out;
  for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

}  // namespace

long parse_time_limit(const std::string& text) {
  static const std::regex form("(?:([0-9]+)-)?([0-9]+):([0-9]{2}):([0-9]{2})");
  std::smatch m;
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("--time " + text + ": " + why);
  };
  if (!std::regex_match(text, m, form))
    throw bad("expected HH:MM:SS or D-HH:MM:SS (e.g. 02:00:00)");
  const long days = m[1].matched ? std::stol(m[1]) : 0;
  const long hours = std::stol(m[2]), minutes = std::stol(m[3]), seconds = std::stol(m[4]);
  if (minutes >= 60 || seconds >= 60) throw bad("minutes and seconds must be below 60");
  if (m[1].matched && hours >= 24) throw bad("hours must be below 24 after a day count");
  const long total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds;
  if (total == 0) throw bad("a time limit of zero");
  return total;
}

void check_sbatch_options(const SbatchOptions& opts, const Suite& suite) {
  auto at_least = [](const char* name, int value, int min) {
    if (value < min)
      throw std::invalid_argument(std::string(name) + " " + std::to_string(value) +
                                  ": expected at least " + std::to_string(min));
  };
  at_least("--nodes", opts.nodes, 1);
  at_least("--ntasks-per-node", opts.ntasks_per_node, 1);
  at_least("--gpus-per-node", opts.gpus_per_node, 0);
  at_least("--grace", opts.grace_seconds, 0);
  if (!opts.partition.empty() && !std::regex_match(opts.partition, std::regex("[A-Za-z0-9_.,-]+")))
    throw std::invalid_argument(
        "--partition '" + opts.partition +
        "': expected a partition name (letters, digits, '_', '-', '.'; several joined by ',')");
  if (!opts.time.empty()) {
    const long limit = parse_time_limit(opts.time);
    if (opts.grace_seconds > 0 && limit <= opts.grace_seconds)
      throw std::invalid_argument("--time " + opts.time + " (" + std::to_string(limit) +
                                  " s) must be longer than --grace " +
                                  std::to_string(opts.grace_seconds) +
                                  " s, the warning before the time limit that requeues the job");
  }
  if (suite.runs.empty()) throw std::invalid_argument(suite.file + ": the suite has no runs");
  const int tasks = opts.nodes * opts.ntasks_per_node;
  for (const auto& r : suite.runs)
    if (r.world_size > tasks)
      throw std::invalid_argument(
          "run '" + r.name + "' of " + suite.file + " needs " + std::to_string(r.world_size) +
          " ranks but the job has --nodes " + std::to_string(opts.nodes) + " x --ntasks-per-node " +
          std::to_string(opts.ntasks_per_node) + " = " + std::to_string(tasks) + " tasks");
  // NCCL refuses two ranks on one GPU: a job that gives its tasks fewer GPUs than them can run a
  // GPU run only over MPI (which lets ranks share a GPU).
  if (opts.gpus_per_node == 0 || opts.ntasks_per_node <= opts.gpus_per_node) return;
  for (const auto& r : suite.runs) {
    if (!r.error.empty()) continue;  // the preflight reports it
    const TrainConfig train = load_experiment(suite.file, r.overrides).train;
    if (train.device == "cpu" || train.backend == "mpi") continue;
    throw std::invalid_argument(
        "run '" + r.name + "' of " + suite.file + " trains on GPUs over NCCL (train.device " +
        train.device + ", train.backend " + train.backend +
        "), which needs a GPU per rank, but the job has --ntasks-per-node " +
        std::to_string(opts.ntasks_per_node) + " and --gpus-per-node " +
        std::to_string(opts.gpus_per_node) +
        " (set train.backend: mpi to let ranks share GPUs, or give one GPU per task)");
  }
}

Suite load_job_suite(const std::string& experiment, const RegisteredAlgorithms& registered,
                     const std::vector<std::string>& overrides) {
  // Also reports a missing or invalid file.
  Suite suite = expand_suite(experiment, registered, overrides, /*keep_invalid_runs=*/true);
  YAML::Node grid = YAML::LoadFile(experiment)["grid"];
  if (!grid.IsDefined() || grid.IsNull() || grid.size() == 0)
    throw ConfigError(experiment +
                      ": no grid: section; cedar sbatch submits suites (for a single "
                      "experiment, run `srun cedar run " +
                      experiment + "` inside an allocation)");
  return suite;
}

std::string run_log_name(size_t index, size_t run_count, const std::string& run_name) {
  const int width =
      std::max<int>(2, static_cast<int>(std::to_string(run_count ? run_count - 1 : 0).size()));
  std::string number = std::to_string(index);
  if (static_cast<int>(number.size()) < width) number.insert(0, width - number.size(), '0');
  return "run-" + number + "-" + file_safe(run_name) + ".log";
}

std::string job_dir_for(const std::string& db, const std::string& suite_name, long unix_time) {
  std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  auto folder = std::filesystem::path(db).parent_path();
  return (folder / "slurm" / (file_safe(suite_name) + "-" + stamp)).string();
}

std::string job_script(const SbatchOptions& opts, const JobCommand& cmd, const Suite& suite) {
  const size_t n = suite.runs.size();
  const std::string last = std::to_string(n - 1);
  std::string s = "#!/bin/bash\n";
  s += "# Suite '" + suite.name + "' of " + cmd.experiment + ": " + std::to_string(n) +
       " run(s), " + (opts.array ? "one per array task" : "one after the other in this job") +
       ".\n";
  s += "# Written by `cedar sbatch`; `sbatch " + cmd.job_dir + "/job.sh` submits it again.\n";
  s += "#SBATCH --job-name=cedar-" + file_safe(suite.name) + "\n";
  s += "#SBATCH --nodes=" + std::to_string(opts.nodes) + "\n";
  s += "#SBATCH --ntasks-per-node=" + std::to_string(opts.ntasks_per_node) + "\n";
  if (opts.gpus_per_node > 0)
    s += "#SBATCH --gpus-per-node=" + std::to_string(opts.gpus_per_node) + "\n";
  if (!opts.partition.empty()) s += "#SBATCH --partition=" + opts.partition + "\n";
  if (!opts.time.empty()) s += "#SBATCH --time=" + opts.time + "\n";
  if (opts.array) s += "#SBATCH --array=0-" + last + "\n";
  s += "#SBATCH --chdir=" + sbatch_path("working folder", cmd.workdir) + "\n";
  s += "#SBATCH --output=" + escape_percent(sbatch_path("job folder", cmd.job_dir)) +
       (opts.array ? "/slurm-%A_%a.out\n" : "/slurm-%j.out\n");
  s += "#SBATCH --open-mode=append\n";
  s += "#SBATCH --requeue\n";
  if (opts.grace_seconds > 0)
    s += "#SBATCH --signal=B:USR1@" + std::to_string(opts.grace_seconds) + "\n";
  s += "set -u\n\n";

  s += "CEDAR=" + shell_word(cmd.cedar) + "\n";
  s += "EXPERIMENT=" + shell_word(cmd.experiment) + "\n";
  s += "DB=" + shell_word(cmd.db) + "\n";
  s += "JOB_DIR=" + shell_word(cmd.job_dir) + "\n";
  s += "MODE=(--results-mode " + shell_word(cmd.results_mode) + ")\n";
  s += std::string("PREFLIGHT=(") + (cmd.skip_preflight ? "--skip-preflight" : "") + ")\n";
  s += "SETS=(";
  for (size_t i = 0; i < cmd.overrides.size(); ++i)
    s += (i ? " " : "") + std::string("--set ") + shell_word(cmd.overrides[i]);
  s += ")\n";
  s += "LOGS=(";
  for (size_t i = 0; i < n; ++i) s += (i ? " " : "") + run_log_name(i, n, suite.runs[i].name);
  s += ")\n\n";

  s += R"sh(# USR1 (sent by Slurm before the time limit, or by `scancel --batch --signal=USR1 JOB`):
# requeue the job. Slurm then stops the running step, whose run marks itself failed, and later
# starts this script again from the top: runs completed in $DB are skipped, the others rerun.
REQUEUED=0
requeue() {
  REQUEUED=1
  echo "cedar: requeueing job $SLURM_JOB_ID before its time limit"
  scontrol requeue "$SLURM_JOB_ID"
}
trap requeue USR1

# run INDEX: run INDEX of the suite (`cedar suite` launches it with srun), output appended to its
# log. The trap interrupts `wait`; the run's own end is then awaited.
run() {
  "$CEDAR" suite "$EXPERIMENT" --db "$DB" --only "$1" "${MODE[@]}" ${PREFLIGHT[@]+"${PREFLIGHT[@]}"} ${SETS[@]+"${SETS[@]}"} >> "$JOB_DIR/${LOGS[$1]}" 2>&1 &
  local pid=$!
  wait "$pid"
  local rc=$?
  while [ "$REQUEUED" = 1 ] && kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done
  echo "cedar: run $1 (${LOGS[$1]}) exited with status $rc"
  return "$rc"
}

)sh";
  s += std::string("echo \"cedar: job ") +
       (opts.array ? "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" : "$SLURM_JOB_ID") +
       ", start $((${SLURM_RESTART_COUNT:-0} + 1)), on $(hostname -s) at $(date -u +%FT%TZ)\"\n";
  if (opts.array) {
    s += "run \"$SLURM_ARRAY_TASK_ID\"\n";
    s += "rc=$?\n";
    s += "[ \"$REQUEUED\" = 1 ] && exit 0\n";
    s += "\"$CEDAR\" merge \"$DB\" \"${MODE[@]}\"\n";
    s += "exit \"$rc\"\n";
  } else {
    s += "failed=0\n";
    s += "for i in $(seq 0 " + last + "); do\n";
    s += "  run \"$i\" || failed=$((failed + 1))\n";
    s += "  [ \"$REQUEUED\" = 1 ] && exit 0\n";
    s += "done\n";
    s += "\"$CEDAR\" merge \"$DB\" \"${MODE[@]}\"\n";
    s += "\"$CEDAR\" report \"$DB\" \"${MODE[@]}\" --suite " + shell_word(suite.name) + "\n";
    s += "[ \"$failed\" -eq 0 ] || { echo \"cedar: $failed run(s) failed\"; exit 3; }\n";
  }
  return s;
}

}  // namespace cedar
