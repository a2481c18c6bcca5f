// `cedar sbatch` job scripts: the #SBATCH lines, the array range, the per-run logs, option
// checks with clear errors, and the script itself run by bash with a stand-in cedar and scontrol
// (the exact argv of every `cedar suite --only i`, failures, the USR1 requeue path).
#include "runner/suite/sbatch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "config/params.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

// The suites here list their algorithms (no `every: registered`), so no catalog is needed.
const RegisteredAlgorithms kNoCatalog;

// A fresh folder under the test temp folder, removed again when the test ends.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path(fs::path(::testing::TempDir()) / ("sbatch_test_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kSuiteYaml =
    "name: tiny\nsuite: tiny\nmodel: {name: lenet5}\ndata: {name: fashion-mnist}\n"
    "train: {epochs: 1, batch_size: 32}\nalgorithm: dense\n"
    "grid:\n  world_size: [2]\n  algorithm: [dense, fp16, {name: topk, label: top-1%, ratio: "
    "0.01}]\n";

Suite tiny_suite(const fs::path& dir) {
  return load_job_suite(write_file(dir / "tiny.yaml", kSuiteYaml), kNoCatalog,
                        {"data.train_limit=2000"});
}

JobCommand command_in(const fs::path& dir, const Suite& suite) {
  JobCommand cmd;
  cmd.cedar = "/opt/cedar/bin/cedar";
  cmd.workdir = "/home/me/cedar";
  cmd.experiment = suite.file;
  cmd.db = (dir / "results.db").string();
  cmd.job_dir = (dir / "job").string();
  cmd.overrides = {"data.train_limit=2000"};
  return cmd;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

std::string error_of(const SbatchOptions& opts, const Suite& suite) {
  try {
    check_sbatch_options(opts, suite);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Sbatch, TimeLimits) {
  EXPECT_EQ(parse_time_limit("02:00:00"), 7200);
  EXPECT_EQ(parse_time_limit("00:01:30"), 90);
  EXPECT_EQ(parse_time_limit("48:00:00"), 48 * 3600);
  EXPECT_EQ(parse_time_limit("1-00:00:30"), 86430);
  for (const char* bad :
       {"90", "1:2:3", "00:60:00", "00:00:75", "1-24:00:00", "00:00:00", "2h", ""}) {
    try {
      parse_time_limit(bad);
      ADD_FAILURE() << "accepted --time " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--time ") + bad + ":"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Sbatch, OptionErrorsNameTheOption) {
  TempDir tmp("options");
  const fs::path& dir = tmp.path;
  Suite suite = tiny_suite(dir);
  SbatchOptions ok;
  ok.ntasks_per_node = 2;
  EXPECT_EQ(error_of(ok, suite), "");

  SbatchOptions o = ok;
  o.nodes = 0;
  EXPECT_EQ(error_of(o, suite), "--nodes 0: expected at least 1");
  o = ok;
  o.ntasks_per_node = 1;  // the grid's world size is 2
  EXPECT_EQ(error_of(o, suite),
            "run 'dense' of " + suite.file +
                " needs 2 ranks but the job has --nodes 1 x --ntasks-per-node 1 = 1 tasks");
  o.nodes = 2;  // two nodes of one task each hold it
  EXPECT_EQ(error_of(o, suite), "");
  o = ok;
  o.gpus_per_node = -1;
  EXPECT_EQ(error_of(o, suite), "--gpus-per-node -1: expected at least 0");
  // GPU runs: NCCL (auto on a GPU) needs a GPU per task, MPI lets tasks share one.
  o = ok;
  o.gpus_per_node = 1;
  EXPECT_EQ(error_of(o, suite), "") << "CPU runs need no GPU each";
  TempDir gpus("gpus");
  const std::string gpu_file = write_file(gpus.path / "tiny.yaml", kSuiteYaml);
  const Suite on_gpus = load_job_suite(gpu_file, kNoCatalog, {"train.device=cuda"});
  EXPECT_EQ(error_of(o, on_gpus),
            "run 'dense' of " + gpu_file +
                " trains on GPUs over NCCL (train.device cuda, train.backend auto), which needs a "
                "GPU per rank, but the job has --ntasks-per-node 2 and --gpus-per-node 1 (set "
                "train.backend: mpi to let ranks share GPUs, or give one GPU per task)");
  EXPECT_EQ(
      error_of(o, load_job_suite(gpu_file, kNoCatalog, {"train.device=cuda", "train.backend=mpi"})),
      "");
  o.gpus_per_node = 2;
  EXPECT_EQ(error_of(o, on_gpus), "");
  o = ok;
  o.time = "00:02:00";
  EXPECT_EQ(error_of(o, suite),
            "--time 00:02:00 (120 s) must be longer than --grace 120 s, the warning "
            "before the time limit that requeues the job");
  o.grace_seconds = 60;
  EXPECT_EQ(error_of(o, suite), "");
  o.time = "two hours";
  EXPECT_NE(error_of(o, suite).find("--time two hours: expected HH:MM:SS"), std::string::npos);
  o = ok;
  o.partition = "gpu big";
  EXPECT_NE(error_of(o, suite).find("--partition 'gpu big'"), std::string::npos);
}

TEST(Sbatch, SuiteFilesWithoutGridOrMissing) {
  TempDir tmp("nogrid");
  const fs::path& dir = tmp.path;
  const std::string single =
      write_file(dir / "one.yaml", "name: one\nmodel: {name: lenet5}\nalgorithm: dense\n");
  try {
    load_job_suite(single, kNoCatalog, {});
    ADD_FAILURE() << "a file without grid: was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(single + ": no grid: section", 0), 0u) << e.what();
  }
  try {
    load_job_suite((dir / "missing.yaml").string(), kNoCatalog, {});
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.yaml: cannot open experiment file"),
              std::string::npos);
  }
}

TEST(Sbatch, NamesOfLogsAndJobFolders) {
  EXPECT_EQ(run_log_name(3, 12, "dgc-99.9/np4"), "run-03-dgc-99.9_np4.log");
  EXPECT_EQ(run_log_name(7, 150, "top-1%"), "run-007-top-1_.log");
  EXPECT_EQ(job_dir_for("/data/results/q.db", "quick", 86400 + 3723),
            "/data/results/slurm/quick-19700102-010203");
}

TEST(Sbatch, ScriptHeaderOneJob) {
  TempDir tmp("header");
  const fs::path& dir = tmp.path;
  Suite suite = tiny_suite(dir);
  SbatchOptions opts;
  opts.nodes = 2;
  opts.ntasks_per_node = 4;
  opts.gpus_per_node = 1;
  opts.partition = "gpu";
  opts.time = "01:30:00";
  const std::string job = (dir / "job").string();
  const std::string text = job_script(opts, command_in(dir, suite), suite);
  EXPECT_EQ(text.rfind("#!/bin/bash\n", 0), 0u);
  const std::vector<std::string> want = {
      "#SBATCH --job-name=cedar-tiny",  "#SBATCH --nodes=2",
      "#SBATCH --ntasks-per-node=4",    "#SBATCH --gpus-per-node=1",
      "#SBATCH --partition=gpu",        "#SBATCH --time=01:30:00",
      "#SBATCH --chdir=/home/me/cedar", "#SBATCH --output=" + job + "/slurm-%j.out",
      "#SBATCH --open-mode=append",     "#SBATCH --requeue",
      "#SBATCH --signal=B:USR1@120",
  };
  EXPECT_EQ(lines_starting(text, "#SBATCH"), want);
  EXPECT_EQ(lines_starting(text, "LOGS="),
            std::vector<std::string>{"LOGS=(run-00-dense.log run-01-fp16.log run-02-top-1_.log)"});
  EXPECT_EQ(lines_starting(text, "SETS="),
            std::vector<std::string>{"SETS=(--set data.train_limit=2000)"});
  EXPECT_EQ(lines_starting(text, "for i in "), std::vector<std::string>{"for i in $(seq 0 2); do"});
  EXPECT_EQ(lines_starting(text, "MODE="), std::vector<std::string>{"MODE=(--results-mode auto)"});
  EXPECT_EQ(lines_starting(text, "\"$CEDAR\" merge"),
            std::vector<std::string>{"\"$CEDAR\" merge \"$DB\" \"${MODE[@]}\""});
  EXPECT_EQ(lines_starting(text, "\"$CEDAR\" report"),
            std::vector<std::string>{"\"$CEDAR\" report \"$DB\" \"${MODE[@]}\" --suite tiny"});
}

TEST(Sbatch, ScriptHeaderArray) {
  TempDir tmp("array");
  const fs::path& dir = tmp.path;
  Suite suite = tiny_suite(dir);
  SbatchOptions opts;
  opts.ntasks_per_node = 2;
  opts.array = true;
  opts.grace_seconds = 0;  // no warning signal
  const std::string text = job_script(opts, command_in(dir, suite), suite);
  const std::string job = (dir / "job").string();
  const std::vector<std::string> want = {
      "#SBATCH --job-name=cedar-tiny",  "#SBATCH --nodes=1",
      "#SBATCH --ntasks-per-node=2",    "#SBATCH --array=0-2",
      "#SBATCH --chdir=/home/me/cedar", "#SBATCH --output=" + job + "/slurm-%A_%a.out",
      "#SBATCH --open-mode=append",     "#SBATCH --requeue",
  };
  EXPECT_EQ(lines_starting(text, "#SBATCH"), want);
  EXPECT_EQ(lines_starting(text, "run \""),
            std::vector<std::string>{"run \"$SLURM_ARRAY_TASK_ID\""});
  EXPECT_TRUE(lines_starting(text, "for i in ").empty());
}

// Runs the generated script under bash with a stand-in cedar (it logs its argv, and fails for
// run index FAIL_INDEX or sends USR1 to the job shell for USR1_INDEX) and a stand-in scontrol.
struct ScriptRun {
  int status;
  std::unique_ptr<TempDir> tmp;
  fs::path dir;
};

ScriptRun run_script(const std::string& name, bool array, const std::string& env,
                     bool skip_preflight = false) {
  auto tmp = std::make_unique<TempDir>(name);
  const fs::path dir = tmp->path;
  Suite suite = tiny_suite(dir);
  JobCommand cmd = command_in(dir, suite);
  cmd.cedar = write_file(
      dir / "cedar",
      "#!/bin/bash\n"
      "printf '%s|' \"$@\"; echo\n"
      "[ \"$1\" = suite ] && [ \"$6\" = \"${USR1_INDEX:-}\" ] && { kill -USR1 $PPID; sleep 0.3; }\n"
      "[ \"$1\" = suite ] && [ \"$6\" = \"${FAIL_INDEX:-}\" ] && exit 3\n"
      "[ \"$1\" = report ] && echo report >> \"$(dirname \"$0\")/report.txt\"\n"
      "exit 0\n");
  cmd.overrides = {"data.train_limit=2000", "algorithm={name: dgc, sparsity: 0.99}", "name=it's"};
  cmd.results_mode = "shards";
  cmd.skip_preflight = skip_preflight;
  fs::create_directories(dir / "bin");
  fs::create_directories(cmd.job_dir);
  write_file(dir / "bin" / "scontrol",
             "#!/bin/bash\necho \"$@\" >> \"$(dirname \"$0\")/../scontrol.txt\"\n");
  SbatchOptions opts;
  opts.ntasks_per_node = 2;
  opts.array = array;
  write_file(dir / "job.sh", job_script(opts, cmd, suite));
  const std::string line = "chmod +x '" + cmd.cedar + "' '" + (dir / "bin" / "scontrol").string() +
                           "' && cd '" + dir.string() +
                           "' && PATH=\"$PWD/bin:$PATH\" SLURM_JOB_ID=77 " + env +
                           " bash job.sh > job.out 2>&1";
  int status = std::system(line.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::move(tmp), dir};
}

std::string expected_argv(const fs::path& dir, int index) {
  return "suite|" + (dir / "tiny.yaml").string() + "|--db|" + (dir / "results.db").string() +
         "|--only|" + std::to_string(index) + "|--results-mode|shards" +
         "|--set|data.train_limit=2000|--set|algorithm={name: dgc, sparsity: "
         "0.99}|--set|name=it's|\n";
}

TEST(Sbatch, ScriptRunsEveryRunWithItsOwnLog) {
  ScriptRun r = run_script("run_all", false, "FAIL_INDEX=1");
  EXPECT_EQ(r.status, 3) << read_file(r.dir / "job.out");  // run 1 failed, the others still ran
  EXPECT_EQ(read_file(r.dir / "job" / "run-00-dense.log"), expected_argv(r.dir, 0));
  EXPECT_EQ(read_file(r.dir / "job" / "run-01-fp16.log"), expected_argv(r.dir, 1));
  EXPECT_EQ(read_file(r.dir / "job" / "run-02-top-1_.log"), expected_argv(r.dir, 2));
  EXPECT_EQ(read_file(r.dir / "report.txt"), "report\n");
  const std::string out = read_file(r.dir / "job.out");
  EXPECT_EQ(out.rfind("cedar: job 77, start 1, on ", 0), 0u) << out;
  EXPECT_NE(out.find("cedar: run 1 (run-01-fp16.log) exited with status 3"), std::string::npos)
      << out;
  EXPECT_NE(out.find("cedar: 1 run(s) failed"), std::string::npos) << out;
  EXPECT_NE(out.find("merge|" + (r.dir / "results.db").string() + "|--results-mode|shards|"),
            std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(r.dir / "scontrol.txt"));
}

// `cedar sbatch --skip-preflight`: the job's suites launch without their preflight too.
TEST(Sbatch, SkippedPreflightReachesEverySuite) {
  ScriptRun r = run_script("skip_preflight", true, "SLURM_ARRAY_JOB_ID=70 SLURM_ARRAY_TASK_ID=1",
                           /*skip_preflight=*/true);
  EXPECT_EQ(r.status, 0) << read_file(r.dir / "job.out");
  std::string want = expected_argv(r.dir, 1);
  want.insert(want.find("|--set|"), "|--skip-preflight");
  EXPECT_EQ(read_file(r.dir / "job" / "run-01-fp16.log"), want);
}

TEST(Sbatch, ArrayTaskRunsOnlyItsRun) {
  ScriptRun r =
      run_script("array_task", true, "SLURM_ARRAY_JOB_ID=70 SLURM_ARRAY_TASK_ID=2 FAIL_INDEX=2");
  EXPECT_EQ(r.status, 3) << read_file(r.dir / "job.out");
  EXPECT_EQ(read_file(r.dir / "job.out").rfind("cedar: job 70_2, start 1, on ", 0), 0u)
      << read_file(r.dir / "job.out");
  EXPECT_EQ(read_file(r.dir / "job" / "run-02-top-1_.log"), expected_argv(r.dir, 2));
  EXPECT_FALSE(fs::exists(r.dir / "job" / "run-00-dense.log"));
  EXPECT_FALSE(fs::exists(r.dir / "job" / "run-01-fp16.log"));
  EXPECT_FALSE(fs::exists(r.dir / "report.txt"));  // array tasks print no table
  // ... but merge the shards of their run (and any other closed ones) into the database.
  EXPECT_NE(read_file(r.dir / "job.out")
                .find("merge|" + (r.dir / "results.db").string() + "|--results-mode|shards|"),
            std::string::npos);
}

TEST(Sbatch, Usr1RequeuesTheJobAndStartsNoFurtherRun) {
  ScriptRun r = run_script("requeue", false, "USR1_INDEX=1");
  EXPECT_EQ(r.status, 0) << read_file(r.dir / "job.out");
  EXPECT_EQ(read_file(r.dir / "scontrol.txt"), "requeue 77\n");
  EXPECT_TRUE(fs::exists(r.dir / "job" / "run-01-fp16.log"));     // the interrupted run
  EXPECT_FALSE(fs::exists(r.dir / "job" / "run-02-top-1_.log"));  // never started
  EXPECT_FALSE(fs::exists(r.dir / "report.txt"));
  EXPECT_NE(read_file(r.dir / "job.out").find("cedar: requeueing job 77 before its time limit"),
            std::string::npos);
}

}  // namespace
}  // namespace cedar
