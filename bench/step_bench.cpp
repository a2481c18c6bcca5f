// One training step per algorithm, split into compute, compression and communication:
//   mpirun -np 2 build/bench/step_bench --model resnet20 --batch 32 [--algorithms dense,dgc]
//   (a name may carry parameters: --algorithms 'powersgd,powersgd{batch_same_shape: true}')
// Each rank trains the model on random batches of its own (batch images per rank, 3x32x32,
// 10 classes) with the pieces the trainer uses: buckets of train.bucket_mb's default, the
// registered algorithm with its default parameters, the SGD optimizer, and the MPI communicator
// wrapped in the metering layer. Per step:
//   compute      forward + backward + copy into the buckets + optimizer step
//   communicate  seconds inside the communicator (reduce_gradients and after_step), as logged
//                by the trainer (waiting for the slower rank included)
//   compress     the rest of reduce_gradients + after_step: encoding, decoding, error feedback,
//                selection, bookkeeping
// Every value is averaged over ranks per step, then the median over the timed steps is printed.
#include <mpi.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "config/experiment_config.h"
#include "models/model.h"
#include "runner/train/buckets.h"
#include "runner/train/optimizer.h"

namespace cedar {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.empty() ? 0 : v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct StepTimes {
  std::vector<double> total, compute, compress, comm, payload;
};

struct Options {
  std::string model = "resnet20";
  int64_t batch = 32;
  int warmup = 3;
  int steps = 8;
  double bucket_mb = 25;
  std::vector<std::string> algorithms;
};

StepTimes run_algorithm(const std::string& name, const Options& o, MeteredCommunicator& comm) {
  torch::manual_seed(1);  // the same initial model on every rank
  ModelSpec spec;
  spec.name = o.model;
  auto model = make_model(spec);
  model->train();
  std::vector<NamedTensor> params, buffers;
  for (auto& p : model->named_parameters()) params.push_back({p.key(), p.value()});
  for (auto& b : model->named_buffers()) buffers.push_back({b.key(), b.value()});
  auto buckets = make_buckets(params, static_cast<int64_t>(o.bucket_mb * 1024 * 1024));
  std::map<std::string, at::Tensor> grad_of;
  for (auto& b : buckets)
    for (auto& e : b.entries) grad_of[e.name] = e.grad;
  std::vector<at::Tensor> grads;
  for (auto& p : params) grads.push_back(grad_of.at(p.name));

  // "powersgd{batch_same_shape: true}": the name, then its parameters as a YAML flow map.
  const size_t brace = name.find('{');
  const YAML::Node algorithm_params =
      brace == std::string::npos ? YAML::Node() : YAML::Load(name.substr(brace));
  auto algorithm = find_algorithm(name.substr(0, brace)).make(algorithm_params, Source{}, nullptr);
  algorithm->setup(params, comm);
  OptimizerConfig ocfg;
  auto optimizer = make_optimizer(ocfg, params, grads, momentum_plan(*algorithm));

  at::Generator gen = make_generator(7, comm.rank(), 0);
  StepTimes t;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    // A fresh batch per step (untimed, as the trainer's loader hands over a ready batch), so that
    // gradients change from step to step as in training (LAG's skipping depends on it).
    const at::Tensor x = at::randn({o.batch, 3, 32, 32}, gen);
    const at::Tensor y = at::randint(10, {o.batch}, gen, at::kLong);
    StepContext ctx;
    ctx.step = step;
    ctx.epoch = 100;  // past every warm-up schedule (DGC's sparsity)
    ctx.steps_per_epoch = 1000;
    ctx.lr = ctx.base_lr = 0.01;
    ctx.seed = 1;
    ctx.momentum_buffers = &optimizer->momentum_buffers();

    const double t0 = now();
    model->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    gather_gradients(buckets);
    const double t1 = now();
    comm.reset_step();
    for (auto& b : buckets) algorithm->reduce_gradients(b, comm, ctx);
    const double t2 = now();
    optimizer->step(ctx.lr);
    const double t3 = now();
    algorithm->after_step(params, buffers, comm, ctx);
    const double t4 = now();
    const CommCounters c = comm.step();

    // Average over ranks (outside the timed region).
    double v[5] = {t4 - t0, (t1 - t0) + (t3 - t2), (t2 - t1) + (t4 - t3) - c.seconds, c.seconds,
                   static_cast<double>(c.payload_bytes)};
    MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (double& e : v) e /= comm.size();
    if (step < o.warmup) continue;
    t.total.push_back(v[0]);
    t.compute.push_back(v[1]);
    t.compress.push_back(v[2]);
    t.comm.push_back(v[3]);
    t.payload.push_back(v[4]);
  }
  return t;
}

// Splits at the commas outside braces: "dense,powersgd{rank: 2, warm_start: false}" is two items.
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : s) {
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (c == ',' && depth == 0)
      out.emplace_back();
    else
      out.back() += c;
  }
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

}  // namespace
}  // namespace cedar

int main(int argc, char** argv) {
  using namespace cedar;
  CLI::App app{"One training step per algorithm: compute / compression / communication"};
  Options o;
  std::string algorithms = "all", csv;
  int threads = 1;
  app.add_option("--model", o.model, "model name (cedar list)");
  app.add_option("--batch", o.batch, "images per rank per step")->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed steps per algorithm")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--steps", o.steps, "timed steps per algorithm")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "intra-op threads per rank")->check(CLI::PositiveNumber);
  app.add_option("--bucket-mb", o.bucket_mb, "gradient bucket size in MiB")
      ->check(CLI::PositiveNumber);
  app.add_option("--algorithms", algorithms,
                 "comma-separated algorithm names (all: every registered one); a name may carry "
                 "its parameters as a "
                 "YAML flow map: powersgd{batch_same_shape: true}");
  app.add_option("--csv", csv, "also write the rows to this CSV file (rank 0)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  torch::set_num_threads(threads);
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const bool root = comm.rank() == 0;
  for (const std::string& item : split(algorithms)) {
    if (item != "all") {
      o.algorithms.push_back(item);
      continue;
    }
    for (const std::string& name : gradient_algorithm_names()) o.algorithms.push_back(name);
  }

  struct Row {
    std::string algorithm;
    double total, compute, compress, comm, payload;
  };
  std::vector<Row> rows;
  try {
    for (const std::string& name : o.algorithms) {
      StepTimes t = run_algorithm(name, o, comm);
      rows.push_back({name, median(t.total), median(t.compute), median(t.compress), median(t.comm),
                      median(t.payload)});
      if (root) {
        const Row& r = rows.back();
        std::printf(
            "%-12s %9.1f ms  compute %8.1f  compress %7.1f  comm %7.1f ms  %10.3f "
            "MB/rank\n",
            r.algorithm.c_str(), 1e3 * r.total, 1e3 * r.compute, 1e3 * r.compress, 1e3 * r.comm,
            r.payload / 1e6);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "step_bench: %s\n", e.what());
    MpiCommunicator::abort_job(2);
  }
  if (root && !csv.empty()) {
    FILE* f = std::fopen(csv.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "step_bench: cannot write %s\n", csv.c_str());
      MpiCommunicator::abort_job(2);
    }
    std::fprintf(f,
                 "model,batch,ranks,threads,algorithm,step_s,compute_s,compress_s,comm_s,"
                 "payload_bytes\n");
    for (const Row& r : rows)
      std::fprintf(f, "%s,%lld,%d,%d,\"%s\",%.6g,%.6g,%.6g,%.6g,%.0f\n", o.model.c_str(),
                   static_cast<long long>(o.batch), comm.size(), threads, r.algorithm.c_str(),
                   r.total, r.compute, r.compress, r.comm, r.payload);
    std::fclose(f);
  }
  return 0;
}
