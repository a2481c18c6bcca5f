// The cost of a compressor written in Python (algorithm `script`, TorchScript) against the same
// compressor built in, in one run: Algorithm::reduce_gradients on one rank (LocalCommunicator:
// the exchange is the identity, so what is timed is encoding, decoding and the harness around
// them), one intra-op thread, as the trainer calls it:
//   reduce/<builtin>/<bucket>          topk {ratio: 0.01} (error feedback on), qsgd {} (4 bits,
//   512) reduce/script_<name>/<bucket>      examples/script_<name>.py with the same parameters
// Buckets: lenet5 (LeNet-5's ten gradients, 61,706 values: the end-to-end test's) and 1m (one
// 1000 x 1000 gradient). Gradients are seeded normals, refilled before each step outside the timed
// region; state (memories) carries over. After the run it prints, per pair, the medians and the
// ratio script / built-in.
// Run: bench/script_bench.sh (exports the examples with Cedar's venv Python into
// CEDAR_SCRIPT_DIR and runs this with repetitions).
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"
#include "comm/communicator.h"

namespace {

const std::map<std::string, std::vector<std::vector<int64_t>>> kBuckets = {
    {"lenet5",
     {{6, 1, 5, 5}, {6}, {16, 6, 5, 5}, {16}, {120, 400}, {120}, {84, 120}, {84}, {10, 84}, {10}}},
    {"1m", {{1000, 1000}}}};

// reduce_gradients of `algorithm` (built from `yaml`) on one bucket of the named shapes.
void reduce(benchmark::State& state, const std::string& algorithm, const std::string& yaml,
            const std::string& bucket_name) {
  const auto& shapes = kBuckets.at(bucket_name);
  std::vector<at::Tensor> grads;
  int64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    at::Generator gen = cedar::make_generator(2024, 0, static_cast<int64_t>(i));
    grads.push_back(at::randn(shapes[i], gen));
    total += grads.back().numel();
  }
  cedar::GradBucket bucket;
  bucket.flat = at::empty({total});
  int64_t off = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    const int64_t n = grads[i].numel();
    bucket.entries.push_back({"p" + std::to_string(i), grads[i].clone(),
                              bucket.flat.narrow(0, off, n).view(grads[i].sizes())});
    off += n;
  }
  auto algo = cedar::find_algorithm(algorithm).make(YAML::Load(yaml), cedar::Source{}, nullptr);
  cedar::LocalCommunicator comm;
  int64_t step = 0;
  auto refill = [&] {
    for (size_t i = 0; i < grads.size(); ++i) bucket.entries[i].grad.copy_(grads[i]);
  };
  auto one_step = [&] {
    cedar::StepContext ctx;
    ctx.step = step++;
    ctx.lr = ctx.base_lr = 0.1;
    ctx.seed = 1;
    algo->reduce_gradients(bucket, comm, ctx);
    benchmark::DoNotOptimize(bucket.flat.data_ptr());
  };
  refill();
  one_step();  // warm-up: memories, the script's first calls
  for (auto _ : state) {
    state.PauseTiming();
    refill();
    state.ResumeTiming();
    one_step();
  }
  state.SetBytesProcessed(state.iterations() * total * static_cast<int64_t>(sizeof(float)));
}

// The console's output, and each benchmark's median real time kept for the ratios.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (r.aggregate_name == "median" || (r.aggregate_name.empty() && !medians_.count(name(r))))
        medians_[name(r)] = r.GetAdjustedRealTime() * to_ms(r.time_unit);
    ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, double>& medians() const { return medians_; }

 private:
  static std::string name(const Run& r) { return r.run_name.str(); }
  static double to_ms(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond: return 1e-6;
      case benchmark::kMicrosecond: return 1e-3;
      case benchmark::kMillisecond: return 1.0;
      default: return 1e3;
    }
  }
  std::map<std::string, double> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  const char* dir = std::getenv("CEDAR_SCRIPT_DIR");
  if (!dir) {
    std::fprintf(stderr,
                 "script_bench: set CEDAR_SCRIPT_DIR to a folder holding script_topk.pt and "
                 "script_qsgd.pt (bench/script_bench.sh exports them)\n");
    return 2;
  }
  struct Pair {
    std::string builtin, yaml, script, script_yaml;
  };
  const std::vector<Pair> pairs = {
      {"topk", "{ratio: 0.01}", "script_topk",
       "{path: '" + std::string(dir) + "/script_topk.pt', ratio: 0.01, error_feedback: true}"},
      {"qsgd", "{}", "script_qsgd", "{path: '" + std::string(dir) + "/script_qsgd.pt'}"}};
  std::vector<std::pair<std::string, std::string>> compared;
  for (const auto& bucket : {"lenet5", "1m"})
    for (const Pair& p : pairs) {
      const std::string a = "reduce/" + p.builtin + "/" + bucket;
      const std::string b = "reduce/" + p.script + "/" + bucket;
      benchmark::RegisterBenchmark(a.c_str(), reduce, p.builtin, p.yaml, std::string(bucket))
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(b.c_str(), reduce, "script", p.script_yaml, std::string(bucket))
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      compared.emplace_back(a, b);
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  std::printf("\n%-28s %12s %12s %8s\n", "script vs built-in", "built-in ms", "script ms", "ratio");
  for (const auto& [a, b] : compared) {
    const auto& m = reporter.medians();
    const auto ia = m.find(a + "/real_time"), ib = m.find(b + "/real_time");
    if (ia == m.end() || ib == m.end()) continue;  // filtered out
    std::printf("%-28s %12.3f %12.3f %7.2fx\n", b.c_str(), ia->second, ib->second,
                ib->second / ia->second);
  }
  return 0;
}
