// Compressors written in Python (algorithm `script`, algorithms/script.cpp): the examples'
// scripted top-k and QSGD against the built-ins (bytes written from the wire formats and the
// shapes, top-k's updates bitwise through error feedback and a changing learning rate, QSGD's
// bytes byte for byte given the same uniforms, its unbiasedness over many draws), an allreduce
// script summed per dtype, a script's own state through a checkpoint, and its parameters.
// The scripts are exported with Cedar's venv Python; without it every test is skipped.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/types.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/script_compressor.h"
#include "tests/unit/algorithm_harness.h"
#include "tests/unit/script_export.h"

namespace cedar {
namespace {

using testing::ceil_div;
using testing::run_steps;
using testing::same_bits;

// A linear codec summed by allreduce: the gradient in fp64 and three int64 zeros (two dtypes).
constexpr const char* kSummedFp64 = R"(import sys
from typing import List
import torch

class SummedFp64(torch.nn.Module):
    exchange: str

    def __init__(self):
        super().__init__()
        self.exchange = "allreduce"

    @torch.jit.export
    def compress(self, x: torch.Tensor) -> List[torch.Tensor]:
        return [x.double(), torch.zeros(3, dtype=torch.int64)]

    @torch.jit.export
    def decompress(self, parts: List[torch.Tensor], numel: int) -> torch.Tensor:
        return parts[0].float() + parts[1].sum().float()

if __name__ == "__main__":
    torch.jit.script(SummedFp64()).save(sys.argv[1])
)";

// Scaled signs with the script's own error-feedback memory, by parameter name.
constexpr const char* kOwnMemory = R"(import sys
from typing import Dict, List
import torch

class OwnMemory(torch.nn.Module):
    exchange: str
    memory: Dict[str, torch.Tensor]

    def __init__(self):
        super().__init__()
        self.exchange = "allgather"
        self.memory = {}
        self.calls = torch.zeros(1, dtype=torch.int64)

    @torch.jit.export
    def compress(self, x: torch.Tensor, name: str) -> List[torch.Tensor]:
        p = x + self.memory[name] if name in self.memory else x.clone()
        parts = [p.abs().mean().view(1), torch.sign(p).to(torch.int8)]
        self.memory[name] = p - self.decompress(parts, p.numel())
        self.calls += 1
        return parts

    @torch.jit.export
    def decompress(self, parts: List[torch.Tensor], numel: int) -> torch.Tensor:
        return parts[1].float() * parts[0]

if __name__ == "__main__":
    torch.jit.script(OwnMemory()).save(sys.argv[1])
)";

// The exported modules by stem: the examples and the scripts above, once per process.
const std::map<std::string, std::string>& example_scripts() {
  static const std::map<std::string, std::string> pts =
      testing::export_scripts({"examples/script_topk.py", "examples/script_qsgd.py",
                               testing::write_script("summed_fp64", kSummedFp64),
                               testing::write_script("own_memory", kOwnMemory)});
  return pts;
}

std::string script_yaml(const std::string& stem, const std::string& more = "") {
  return "{path: '" + example_scripts().at(stem) + "'" + (more.empty() ? "" : ", " + more) + "}";
}

// LeNet-5's parameter shapes (61,706 values).
const std::vector<std::vector<int64_t>> kLenet = {
    {6, 1, 5, 5}, {6}, {16, 6, 5, 5}, {16}, {120, 400}, {120}, {84, 120}, {84}, {10, 84}, {10}};

// Rank r's gradients at step t: normal values; the 84x120 weight's on a grid of 1/8, so that many
// magnitudes tie at its k-th largest.
std::vector<at::Tensor> lenet_grads(int rank, int64_t step) {
  std::vector<at::Tensor> g;
  for (size_t i = 0; i < kLenet.size(); ++i) {
    at::Generator gen = make_generator(31, rank, step, i);
    at::Tensor t = torch::randn(kLenet[i], gen);
    if (i == 6) t = (t * 8).round() / 8;
    g.push_back(t);
  }
  return g;
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

TEST(ScriptTopK, GivesTheBuiltInsBytesAndBitwiseUpdates) {
  SKIP_WITHOUT_VENV_PYTHON();
  testing::StepOptions options(9);
  options.lr_schedule = [](int64_t step) { return step < 2 ? 0.1 : 0.025; };  // memory rescaled
  const auto builtin = run_steps(3, "topk", "{ratio: 0.01}", 4, lenet_grads, options);
  const auto scripted =
      run_steps(3, "script", script_yaml("script_topk", "ratio: 0.01, error_feedback: true"), 4,
                lenet_grads, options);
  // The wire format: k = ceil(d / 100) int32 indices and fp32 values per tensor, one allgather.
  int64_t k = 0;
  for (const auto& shape : kLenet) k += ceil_div(numel_of(shape), 100);
  ASSERT_EQ(k, 622);
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 4; ++s) {
      const auto& a = builtin[r][s];
      const auto& b = scripted[r][s];
      EXPECT_EQ(b.comm.payload_bytes, 8 * k) << "rank " << r << " step " << s;
      EXPECT_EQ(a.comm.payload_bytes, 8 * k);
      EXPECT_EQ(b.comm.calls, 1);
      EXPECT_EQ(b.comm.bus_bytes, a.comm.bus_bytes);
      EXPECT_EQ(b.stats.at("script.payload_bytes"), 8 * k);
      for (size_t i = 0; i < kLenet.size(); ++i)
        EXPECT_TRUE(same_bits(a.grads[i], b.grads[i]))
            << "rank " << r << " step " << s << " tensor " << i;
    }
}

// The script's quantize with the built-in's uniforms (the counter-based ones of the key the
// built-in draws from the same generator): the built-in's payload byte for byte, and its decoding.
TEST(ScriptQsgd, SameUniformsGiveTheBuiltInsPayloadByteForByte) {
  SKIP_WITHOUT_VENV_PYTHON();
  torch::jit::Module qsgd = torch::jit::load(example_scripts().at("script_qsgd"));
  for (const auto& [bits, bucket] : std::vector<std::pair<int, int64_t>>{{4, 512}, {8, 100}}) {
    c10::Dict<std::string, double> params;
    params.insert("bits", bits);
    params.insert("bucket_size", static_cast<double>(bucket));
    qsgd.run_method("configure", params);
    auto builtin = make_qsgd_compressor(bits, bucket, false);
    for (int64_t n : {1, 7, 100, 513, 1300, 48000}) {
      at::Tensor x = testing::randn_seeded(n, static_cast<uint64_t>(n));
      x[0] = 0.0f;
      if (n > 2) x[2] = -0.0f;
      at::Generator mine = make_generator(5, 0, n), theirs = make_generator(5, 0, n);
      at::Tensor u = torch::empty({n});
      CounterUniforms(draw_key(mine)).fill(0, n, u.data_ptr<float>());
      const at::Tensor payload = builtin->compress(x, theirs);
      const auto parts = qsgd.run_method("quantize", x, u).toTensorVector();
      ASSERT_EQ(parts.size(), 2u);
      const at::Tensor bytes = torch::cat({parts[0].view(torch::kUInt8), parts[1]});
      EXPECT_EQ(bytes.numel(), 4 * ceil_div(n, bucket) + ceil_div(n * (bits + 1), 8)) << n;
      EXPECT_TRUE(torch::equal(bytes, payload)) << "bits " << bits << ", n = " << n;
      c10::List<at::Tensor> list({parts[0], parts[1]});
      const at::Tensor decoded = qsgd.run_method("decompress", list, n).toTensor();
      EXPECT_TRUE(same_bits(decoded, builtin->decompress(payload, n))) << n;
    }
  }
}

TEST(ScriptQsgd, MetersTheBuiltInsBytes) {
  SKIP_WITHOUT_VENV_PYTHON();
  const auto builtin = run_steps(2, "qsgd", "{}", 2, lenet_grads);
  const auto scripted = run_steps(2, "script", script_yaml("script_qsgd"), 2, lenet_grads);
  int64_t bytes = 0;  // 4-bit levels and a sign: 5 bits per value, one fp32 norm per 512
  for (const auto& shape : kLenet)
    bytes += 4 * ceil_div(numel_of(shape), 512) + ceil_div(5 * numel_of(shape), 8);
  for (int r = 0; r < 2; ++r)
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(scripted[r][s].comm.payload_bytes, bytes);
      EXPECT_EQ(builtin[r][s].comm.payload_bytes, bytes);
      EXPECT_EQ(scripted[r][s].comm.bus_bytes, builtin[r][s].comm.bus_bytes);
    }
  testing::expect_ranks_agree(scripted);
}

// E[decode(compress(x))] = x: the mean of T decodings (fresh generators) is within five standard
// errors of x, the standard error of one element at most (norm / s) / (2 sqrt(T)). Rounding
// down instead (a biased quantizer) would be off by (norm / s) / 2 on average: 20 bounds.
TEST(ScriptQsgd, DecodingIsUnbiasedOverManyDraws) {
  SKIP_WITHOUT_VENV_PYTHON();
  ScriptCompressor codec(std::make_shared<ScriptModule>(example_scripts().at("script_qsgd")));
  codec.set_name("w");
  const int64_t n = 1000, draws = 400;
  const at::Tensor x = testing::randn_seeded(n, 3);
  at::Tensor sum = torch::zeros({n}, torch::kDouble);
  at::Tensor first;
  for (int64_t t = 0; t < draws; ++t) {
    at::Generator gen = make_generator(77, 0, t);
    const at::Tensor payload = codec.compress(x, gen);
    if (t == 0) first = payload;
    if (t == 1) {
      EXPECT_FALSE(torch::equal(first, payload)) << "two draws gave the same bytes";
    }
    sum += codec.decompress(payload, n).to(torch::kDouble);
  }
  at::Generator again = make_generator(77, 0, 0);
  EXPECT_TRUE(torch::equal(codec.compress(x, again), first)) << "a generator's draws repeat";
  const double norm = x.narrow(0, 0, 512).norm().item<double>();  // the larger of the 2 buckets
  const double bound = std::max(norm, x.narrow(0, 512, n - 512).norm().item<double>()) / 15.0 /
                       (2.0 * std::sqrt(static_cast<double>(draws)));
  const double worst = (sum / draws - x.to(torch::kDouble)).abs().max().item<double>();
  EXPECT_LT(worst, 5 * bound);
}

// An allreduce script: its fp64 tensors in one allreduce and its int64 ones in another, summed
// and decoded once, then divided by the rank count.
TEST(ScriptAllreduce, SumsEachDtypeInOneAllreduceThenAverages) {
  SKIP_WITHOUT_VENV_PYTHON();
  const int ranks = 3;
  const auto out = run_steps(ranks, "script", script_yaml("summed_fp64"), 2, lenet_grads);
  int64_t values = 0;
  for (const auto& shape : kLenet) values += numel_of(shape);
  for (int s = 0; s < 2; ++s) {
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(out[r][s].comm.calls, 2);
      EXPECT_EQ(out[r][s].comm.payload_bytes, 8 * values + 8 * 3 * 10);
    }
    std::vector<at::Tensor> sum(kLenet.size());
    for (int r = 0; r < ranks; ++r) {
      const auto g = lenet_grads(r, s);
      for (size_t i = 0; i < g.size(); ++i)
        sum[i] = r == 0 ? g[i].to(torch::kDouble) : sum[i] + g[i].to(torch::kDouble);
    }
    for (size_t i = 0; i < kLenet.size(); ++i)
      EXPECT_TRUE(torch::allclose(out[0][s].grads[i], sum[i].to(torch::kFloat) / ranks, 1e-6, 0))
          << "step " << s << " tensor " << i;
  }
  testing::expect_ranks_agree(out);
}

// A script's own memory (a Dict[str, Tensor] attribute) and Cedar's error feedback around it are
// checkpointed: steps 3 and 4 after a restore equal those of the run that went on; without the
// restore they differ.
TEST(ScriptState, ResumesBitwiseFromASavedState) {
  SKIP_WITHOUT_VENV_PYTHON();
  const std::string yaml = script_yaml("own_memory", "error_feedback: true");
  LocalCommunicator comm;
  auto step = [&](Algorithm& alg, GradBucket& bucket, int64_t t) {
    const auto g = lenet_grads(0, t);
    for (size_t i = 0; i < g.size(); ++i) bucket.entries[i].grad.copy_(g[i]);
    StepContext ctx;
    ctx.step = t;
    ctx.lr = 0.1;
    alg.reduce_gradients(bucket, comm, ctx);
    std::vector<at::Tensor> out;
    for (const auto& e : bucket.entries) out.push_back(e.grad.clone());
    return out;
  };
  auto straight = testing::make_algorithm("script", yaml);
  auto first = testing::make_algorithm("script", yaml);
  GradBucket b1 = testing::bucket_of_shapes(kLenet), b2 = testing::bucket_of_shapes(kLenet);
  std::vector<std::vector<at::Tensor>> expected;
  for (int64_t t = 0; t < 5; ++t) expected.push_back(step(*straight, b1, t));
  for (int64_t t = 0; t < 3; ++t) step(*first, b2, t);
  AlgorithmState state;
  first->save_state(state);
  EXPECT_EQ(state.count("script/calls"), 1u);
  EXPECT_EQ(state.count("script/memory/t4"), 1u);
  auto resumed = testing::make_algorithm("script", yaml);
  resumed->load_state(state);
  auto fresh = testing::make_algorithm("script", yaml);
  bool fresh_differs = false;
  for (int64_t t = 3; t < 5; ++t) {
    const auto got = step(*resumed, b2, t);
    const auto other = step(*fresh, b1, t);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(same_bits(got[i], expected[t][i])) << "step " << t << " tensor " << i;
      fresh_differs = fresh_differs || !same_bits(other[i], expected[t][i]);
    }
  }
  EXPECT_TRUE(fresh_differs) << "the restored state made no difference";
}

// The keys besides name, path and error_feedback are the script's `defaults`, resolved.
TEST(ScriptParams, ResolvesTheScriptsDefaultsAndOverrides) {
  SKIP_WITHOUT_VENV_PYTHON();
  const YAML::Node topk =
      testing::resolved_params("script", script_yaml("script_topk", "ratio: 0.05"));
  EXPECT_EQ(topk["path"].as<std::string>(), example_scripts().at("script_topk"));
  EXPECT_DOUBLE_EQ(topk["ratio"].as<double>(), 0.05);
  EXPECT_FALSE(topk["error_feedback"].as<bool>());
  // The module file's SHA-256, as coreutils' sha256sum computes it.
  const std::string path = example_scripts().at("script_topk");
  std::string line(128, '\0');
  FILE* pipe = popen(("sha256sum '" + path + "'").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  const size_t got = fread(line.data(), 1, line.size(), pipe);
  pclose(pipe);
  ASSERT_GE(got, 64u);
  EXPECT_EQ(topk["module_sha256"].as<std::string>(), line.substr(0, 64));
  const YAML::Node qsgd = testing::resolved_params("script", script_yaml("script_qsgd", "bits: 8"));
  EXPECT_DOUBLE_EQ(qsgd["bits"].as<double>(), 8);
  EXPECT_DOUBLE_EQ(qsgd["bucket_size"].as<double>(), 512);
  // The parameters reach the script: 5% of each tensor is sent.
  const auto out =
      run_steps(1, "script", script_yaml("script_topk", "ratio: 0.05"), 1, lenet_grads);
  int64_t k = 0;
  for (const auto& shape : kLenet) k += ceil_div(5 * numel_of(shape), 100);
  EXPECT_EQ(out[0][0].stats.at("script.payload_bytes"), 8 * k);
}

}  // namespace
}  // namespace cedar
