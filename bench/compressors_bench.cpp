// Compressor throughput on one thread, in GB/s of fp32 gradient (4 bytes per element processed),
// beside a plain memory pass over the same tensor in the same binary:
//   memory_pass            memcpy of the gradient into a reused buffer (read + write, 4n each)
//   codec/<name>           Compressor::compress then decompress_into of one gradient (the kernels
//                          alone), decoding into a reused buffer as the memory pass copies into
//                          one (training decodes into existing gradient storage), for every
//                          codec of the registry (codecs/codec_registry.h) at its defaults
//   reduce/<algorithm>     Algorithm::reduce_gradients of a one-tensor bucket on one rank
//                          (LocalCommunicator): encode, the (identity) exchange, decode and
//                          combine, as the trainer calls it, for every registered algorithm but
//                          the gossip ones and the parameter server (at every size those without
//                          a codec of the registry; those with one, timed above, at 1M only)
//   generic/<name>         the same codec's device-generic form (codecs/generic_codecs.h, LibTorch
//                          ops, what a GPU gradient runs) on the CPU tensor, encode then decode,
//                          beside codec/<name> at 1M: the cost of those ops on the CPU
//   rng/<way>              uniforms: at::rand (a fresh tensor), and the counter-based uniforms
//                          QSGD and TernGrad draw (counter_rng.h) into a reused buffer
//   blas/powersgd_matmuls  the two products of PowerSGD's step on the same gradient matrix M
//                          (P = M Q, then Q = M^T P, rank 2) as plain at::mm_out calls into
//                          reused outputs; blas/powersgd_matmuls_transposed the same as the
//                          transposes of Q^T M^T and P^T M: the faster of the two is the BLAS
//                          floor reduce/powersgd is judged against
//   dgc_select             DGC's sampled-threshold selection at 0.1% density
//   torch_topk, torch_topk_abs   torch::topk(v, k) and torch::topk(|v|, k) on the same tensor
// Gradients are standard normal (seeded), shaped {n/1000, 1000} so that matrix algorithms
// (PowerSGD, DGC) treat them as one weight matrix; n = 1M, 15M, 25M.
// Run: build/bench/compressors_bench [--benchmark_filter=...] (bench/run.sh runs it with
// repetitions and writes the JSON into results/bench/).
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/codec_registry.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/dgc_select.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/magnitude_topk.h"
#include "algorithms/codecs/qsgd_codec.h"
#include "algorithms/codecs/sparse_codec.h"
#include "comm/communicator.h"

namespace {

using cedar::Compressor;

constexpr int64_t kSizes[] = {1000000, 15000000, 25000000};
constexpr int64_t kColumns = 1000;
constexpr double kDgcDensity = 0.001;

// One seeded N(0, 1) gradient per size, made once and shared by every benchmark (large fresh
// buffers are slow to allocate, and every benchmark then reads the same values).
const at::Tensor& gradient(int64_t n) {
  static std::map<int64_t, at::Tensor> cache;
  at::Tensor& t = cache[n];
  if (!t.defined()) {
    at::Generator gen = cedar::make_generator(2024, 0, n);
    t = at::randn({n / kColumns, kColumns}, gen);
  }
  return t;
}

void set_throughput(benchmark::State& state, int64_t n) {
  state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(sizeof(float)));
}

void memory_pass(benchmark::State& state) {
  const int64_t n = state.range(0);
  const at::Tensor& src = gradient(n);
  at::Tensor dst = at::empty_like(src);
  std::memcpy(dst.data_ptr(), src.data_ptr(), n * sizeof(float));  // fault the pages in once
  for (auto _ : state) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), n * sizeof(float));
    benchmark::DoNotOptimize(dst.data_ptr());
    benchmark::ClobberMemory();
  }
  set_throughput(state, n);
  // bench/python_compressors.py checks that it times the same values.
  state.counters["gradient_sum"] = src.to(at::kDouble).sum().item<double>();
}

// Codec `name` of the registry with its default settings (QSGD 4 bits in buckets of 512, top-k and
// random-k 1%).
void codec(benchmark::State& state, const std::string& name) {
  const int64_t n = state.range(0);
  const at::Tensor x = gradient(n).reshape({-1});
  std::unique_ptr<Compressor> c = cedar::find_codec(name).make(cedar::CodecSettings{});
  at::Tensor decoded = at::empty({n});  // reused, faulted in by the warm-up
  int64_t step = 0, payload_bytes = 0;
  auto round_trip = [&] {
    at::Generator gen = cedar::make_generator(1, 0, step++);
    at::Tensor payload = c->compress(x, gen);
    c->decompress_into(payload, decoded);
    payload_bytes = payload.numel();
    benchmark::DoNotOptimize(decoded.data_ptr());
    benchmark::ClobberMemory();
  };
  round_trip();  // warm-up
  for (auto _ : state) round_trip();
  set_throughput(state, n);
  state.counters["payload_bytes"] = static_cast<double>(payload_bytes);
}

// One encode then decode by a codec's device-generic form (a fresh output, as on a device):
// {payload, decoded}.
using GenericRoundTrip =
    std::function<std::pair<at::Tensor, at::Tensor>(const at::Tensor& x, at::Generator& gen)>;

// The registered codecs whose device-generic form is code of its own (codecs/generic_codecs.h),
// by registry name, with codec/<name>'s parameters.
const std::map<std::string, GenericRoundTrip>& generic_forms() {
  namespace generic = cedar::generic;
  static const cedar::QsgdFormat f{4, 512, false};
  static const std::map<std::string, GenericRoundTrip> forms = {
      {"qsgd",
       [](const at::Tensor& x, at::Generator& gen) {
         const cedar::CounterUniforms rng(cedar::draw_key(gen));
         at::Tensor payload = generic::qsgd_encode(f, x, generic::qsgd_norms(f, x), rng);
         return std::make_pair(payload, generic::qsgd_decode(f, payload, x.numel()));
       }},
      {"sign",
       [](const at::Tensor& x, at::Generator&) {
         at::Tensor payload = generic::pack_signs(x);
         return std::make_pair(payload, generic::unpack_signs(payload, x.numel(), 1.0f, -1.0f));
       }},
      {"scaled_sign",
       [](const at::Tensor& x, at::Generator&) {
         at::Tensor payload = generic::scaled_sign_encode(x, generic::l1_scale(x));
         return std::make_pair(payload, generic::scaled_sign_decode(payload, x.numel()));
       }},
      {"fp16",
       [](const at::Tensor& x, at::Generator&) {
         at::Tensor payload = generic::halves_encode(x);
         return std::make_pair(payload, generic::halves_decode(payload, x.numel()));
       }},
      {"topk",
       [](const at::Tensor& x, at::Generator&) {  // 1%
         const int64_t n = x.numel();
         const at::Tensor idx = cedar::magnitude_topk_indices(x, cedar::keep_count(n, 0.01));
         at::Tensor payload = cedar::encode_sparse(idx, x.index_select(0, idx));
         return std::make_pair(payload, at::zeros({n}).index_put_({idx}, x.index_select(0, idx)));
       }},
  };
  return forms;
}

// The device-generic form of codec `name` on the CPU gradient: encode then decode, the encodings
// of codec/<name> with the same parameters.
void generic_codec(benchmark::State& state, const std::string& name) {
  const int64_t n = state.range(0);
  const at::Tensor x = gradient(n).reshape({-1});
  const GenericRoundTrip& form = generic_forms().at(name);
  int64_t step = 0, payload_bytes = 0;
  auto round_trip = [&] {
    at::Generator gen = cedar::make_generator(1, 0, step++);
    const auto [payload, decoded] = form(x, gen);
    payload_bytes = payload.numel();
    benchmark::DoNotOptimize(decoded.data_ptr());
    benchmark::ClobberMemory();
  };
  round_trip();  // warm-up
  for (auto _ : state) round_trip();
  set_throughput(state, n);
  state.counters["payload_bytes"] = static_cast<double>(payload_bytes);
}

// reduce_gradients of one bucket holding the whole gradient, on one rank. The bucket is refilled
// with the same gradient before each step (outside the timed region); state (momentum, error
// memories, warm starts) carries over from step to step as in training.
void reduce(benchmark::State& state, const std::string& name) {
  const int64_t n = state.range(0);
  const at::Tensor& g = gradient(n);
  cedar::LocalCommunicator comm;
  auto algo = cedar::find_algorithm(name).make(YAML::Node(), cedar::Source{}, nullptr);
  at::Tensor param = g.clone();
  cedar::GradBucket bucket;
  bucket.flat = at::empty({n});
  bucket.entries.push_back({"weight", param, bucket.flat.view(g.sizes())});
  algo->setup({{"weight", param}}, comm);
  int64_t step = 0;
  auto one_step = [&] {
    cedar::StepContext ctx;
    ctx.step = step++;
    ctx.epoch = 100;  // past every warm-up (DGC's sparsity schedule)
    ctx.lr = ctx.base_lr = 0.1;
    ctx.seed = 1;
    algo->reduce_gradients(bucket, comm, ctx);
    benchmark::DoNotOptimize(bucket.flat.data_ptr());
  };
  bucket.flat.copy_(g.reshape({-1}));
  one_step();  // warm-up: first-step allocations (memories, momentum) happen here
  for (auto _ : state) {
    state.PauseTiming();
    bucket.flat.copy_(g.reshape({-1}));
    state.ResumeTiming();
    one_step();
  }
  set_throughput(state, n);
}

// P = M Q and Q = M^T P for the gradient's matrix M and rank 2 (PowerSGD's default), into
// outputs allocated once: what the same products cost as two plain BLAS calls, or (transposed)
// as the transposes of Q^T M^T and P^T M, the other form PowerSgdProducts may choose
// (algorithms/powersgd_products.h).
void powersgd_matmuls(benchmark::State& state, bool transposed) {
  const int64_t n = state.range(0);
  const at::Tensor& m = gradient(n);
  constexpr int64_t kRank = 2;
  at::Generator gen = cedar::make_generator(3, 0, n);
  at::Tensor q = at::randn({m.size(1), kRank}, gen), p = at::empty({m.size(0), kRank});
  at::Tensor p_rows = at::empty({kRank, m.size(0)}), q_rows = at::empty({kRank, m.size(1)});
  auto run = [&] {
    if (transposed) {
      at::mm_out(p_rows, q.t(), m.t());
      p.copy_(p_rows.t());
      at::mm_out(q_rows, p.t(), m);
      q.copy_(q_rows.t());
    } else {
      at::mm_out(p, m, q);
      at::mm_out(q, m.t(), p);
    }
    q.div_(q.norm());  // keeps the values bounded from iteration to iteration (2 x 1000 floats)
    benchmark::DoNotOptimize(q.data_ptr());
  };
  run();
  for (auto _ : state) run();
  set_throughput(state, n);
}

// One fp32 uniform per element. at_rand: the tensor call; counter: the counter-based uniforms of
// the stochastic quantizers (QSGD, TernGrad), keyed from the generator, into a reused buffer.
void rng(benchmark::State& state, bool tensor) {
  const int64_t n = state.range(0);
  std::vector<float> buffer(tensor ? 0 : static_cast<size_t>(n));
  int64_t step = 0;
  auto draw = [&] {
    at::Generator gen = cedar::make_generator(1, 0, step++);
    if (tensor) {
      at::Tensor u = at::rand({n}, gen);
      benchmark::DoNotOptimize(u.data_ptr());
    } else {
      cedar::CounterUniforms(cedar::draw_key(gen)).fill(0, n, buffer.data());
      benchmark::DoNotOptimize(buffer.data());
    }
  };
  draw();
  for (auto _ : state) draw();
  set_throughput(state, n);
}

void dgc_select(benchmark::State& state) {
  const int64_t n = state.range(0);
  const at::Tensor v = gradient(n).reshape({-1});
  const int64_t k = cedar::keep_count(n, kDgcDensity);
  int64_t step = 0, selected = 0;
  auto select = [&] {
    at::Generator gen = cedar::make_generator(1, 0, step++);
    // The paper's / reference code's defaults: 1% sample, bounds 0.8 and 1.3, 10 lowerings.
    at::Tensor idx = cedar::dgc_select(v, k, kDgcDensity, 0.01, 0.8, 1.3, 10, gen);
    selected = idx.numel();
    benchmark::DoNotOptimize(idx.data_ptr());
  };
  select();
  for (auto _ : state) select();
  set_throughput(state, n);
  state.counters["k"] = static_cast<double>(k);
  state.counters["selected"] = static_cast<double>(selected);
}

void torch_topk(benchmark::State& state, bool magnitude) {
  const int64_t n = state.range(0);
  const at::Tensor v = gradient(n).reshape({-1});
  const int64_t k = cedar::keep_count(n, kDgcDensity);
  auto run = [&] {
    auto top = at::topk(magnitude ? v.abs() : v, k, 0, /*largest=*/true, /*sorted=*/false);
    benchmark::DoNotOptimize(std::get<1>(top).data_ptr());
  };
  run();
  for (auto _ : state) run();
  set_throughput(state, n);
  state.counters["k"] = static_cast<double>(k);
}

template <class Fn, class... Args>
benchmark::internal::Benchmark* add_sized(const std::string& name, Fn fn, Args... args) {
  return benchmark::RegisterBenchmark(name.c_str(), fn, args...)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

template <class Fn, class... Args>
void add(const std::string& name, Fn fn, Args... args) {
  auto* b = add_sized(name, fn, args...);
  for (int64_t n : kSizes) b->Arg(n);
}

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  add("memory_pass", memory_pass);
  for (const auto& c : cedar::codec_catalog()) add("codec/" + c.name, codec, c.name);
  for (const auto& [name, form] : generic_forms())
    cedar::find_codec(name);  // each a form of a registered codec (throws naming the known ones)
  for (const auto& c : cedar::codec_catalog())
    if (generic_forms().count(c.name))
      add_sized("generic/" + c.name, generic_codec, c.name)->Arg(kSizes[0]);
  // Algorithms through reduce_gradients: at every size those without a codec of the registry
  // (their codec trait), at the smallest size the others (the cost of the exchange around their
  // codec, timed above). The gossip algorithms leave the gradient local and act after the step
  // (comm_bench times their exchange); the parameter server trains through loops of its own.
  for (const auto& info : cedar::algorithm_catalog()) {
    if (info.gossip || !info.exchanges_gradients || !info.runs_from_defaults) continue;
    if (!info.codec.empty()) {
      add_sized("reduce/" + info.name, reduce, info.name)->Arg(kSizes[0]);
    } else {
      add("reduce/" + info.name, reduce, info.name);
    }
  }
  add("rng/at_rand", rng, true);
  add("rng/counter", rng, false);
  add("blas/powersgd_matmuls", powersgd_matmuls, false);
  add("blas/powersgd_matmuls_transposed", powersgd_matmuls, true);
  add("dgc_select", dgc_select);
  add("torch_topk", torch_topk, false);
  add("torch_topk_abs", torch_topk, true);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
