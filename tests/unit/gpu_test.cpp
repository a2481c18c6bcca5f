// The GPU path (skipped without a CUDA device): the NCCL communicator on one rank, and every
// registered algorithm exchanging CUDA gradients — its output stays on the GPU, is finite, and
// for the deterministic algorithms equals the same exchange on the CPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"
#include "comm/metered_communicator.h"
#include "comm/nccl_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

#define SKIP_WITHOUT_GPU()                                                    \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible"; \
  static_assert(true)

TEST(NcclCommunicator, OneRankCollectivesKeepTheirInput) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(nccl_available()) << "this build has no NCCL backend";
  LocalCommunicator bootstrap;
  auto nccl = make_nccl_communicator(bootstrap, 0);
  MeteredCommunicator comm(*nccl);
  auto x = torch::arange(1000, torch::dtype(torch::kFloat).device(torch::kCUDA));
  auto y = x.clone();
  comm.allreduce_sum(y);
  EXPECT_TRUE(torch::equal(y.cpu(), x.cpu()));
  EXPECT_TRUE(torch::equal(comm.allgather(x).cpu(), x.cpu()));
  auto parts = comm.allgatherv(x.narrow(0, 0, 7));
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_TRUE(torch::equal(parts[0].cpu(), x.narrow(0, 0, 7).cpu()));
  comm.broadcast(y, 0);
  EXPECT_TRUE(torch::equal(y.cpu(), x.cpu()));
  EXPECT_EQ(comm.totals().at("allreduce").calls, 1);
}

// Three steps of a toy loop on `device`; returns the last reduced bucket on the CPU.
torch::Tensor exchange_on(const AlgorithmInfo& info, torch::Device device) {
  LocalCommunicator comm;
  auto alg = info.make(YAML::Node(), Source{}, nullptr);
  auto gen = make_generator(5, 0, 0);
  std::vector<NamedTensor> params = {{"w", torch::randn({12, 10}, gen).to(device)},
                                     {"b", torch::randn({30}, gen).to(device)}};
  alg->setup(params, comm);
  torch::Tensor last;
  for (int64_t step = 0; step < 3; ++step) {
    GradBucket bucket = testing::bucket_of_shapes({{12, 10}, {30}}, 0, "p");
    bucket.flat = bucket.flat.to(device);
    int64_t off = 0;
    for (size_t i = 0; i < bucket.entries.size(); ++i) {
      auto& e = bucket.entries[i];
      e.name = params[i].name;
      e.param = params[i].tensor;
      e.grad = bucket.flat.narrow(0, off, e.grad.numel()).view(e.grad.sizes());
      off += e.grad.numel();
      auto g = make_generator(77, 0, step, i);
      e.grad.copy_(torch::randn(e.grad.sizes(), g).to(device));
    }
    StepContext ctx;
    ctx.step = step;
    ctx.steps_per_epoch = 10;
    ctx.lr = 0.1;
    ctx.base_lr = 0.1;
    ctx.seed = 9;
    alg->reduce_gradients(bucket, comm, ctx);
    EXPECT_EQ(bucket.flat.device(), device) << info.name << " moved the bucket";
    for (size_t i = 0; i < params.size(); ++i) params[i].tensor.sub_(bucket.entries[i].grad, 0.1);
    alg->after_step(params, {}, comm, ctx);
    last = bucket.flat.cpu();
  }
  return last;
}

// Every codec encodes a CUDA tensor on the GPU (algorithms/codecs/generic_codecs.h) into the
// bytes the CPU kernels write for the same tensor and generator, and decodes them there to the
// same bits. EF-signSGD's scale comes from a differently ordered fp64 sum on the GPU: its sign
// bits must agree and its scale be within an fp32 ulp.
TEST(GpuCodecs, EncodeOnTheGpuWithTheCpuBytes) {
  SKIP_WITHOUT_GPU();
  const torch::Device cuda(torch::kCUDA, 0);
  using Make = std::function<std::unique_ptr<Compressor>()>;
  std::vector<std::pair<std::string, Make>> codecs = {
      {"sign", [] { return make_sign_compressor(); }},
      {"scaled sign", [] { return make_scaled_sign_compressor(); }},
      {"fp16", [] { return make_fp16_compressor(); }},
      {"top-k", [] { return std::make_unique<TopKCompressor>(0.05); }},
      {"random-k", [] { return std::make_unique<RandomKCompressor>(0.05, false); }},
      {"random-k values", [] { return std::make_unique<RandomKCompressor>(0.05, true); }}};
  for (int bits = 1; bits <= 8; ++bits)
    for (int64_t bucket : {int64_t{7}, int64_t{512}})
      for (bool max_norm : {false, true})
        codecs.push_back({"qsgd " + std::to_string(bits) + "/" + std::to_string(bucket) +
                              (max_norm ? "/max" : "/l2"),
                          [=] { return make_qsgd_compressor(bits, bucket, max_norm); }});
  const int64_t n = 40013;
  torch::Tensor x = torch::randn({n}, make_generator(4, 0, 0)).mul_(3).round_();
  x.narrow(0, 0, 3).fill_(-0.0f);
  for (const auto& [name, make] : codecs) {
    auto on_cpu = make(), on_gpu = make();
    at::Generator a = make_generator(6, 0, 0), b = make_generator(6, 0, 0);
    const torch::Tensor expected = on_cpu->compress(x, a);
    const torch::Tensor got = on_gpu->compress(x.to(cuda), b);
    ASSERT_EQ(got.device(), cuda) << name;
    const int64_t skip = name == "scaled sign" ? 4 : 0;
    EXPECT_TRUE(torch::equal(got.cpu().narrow(0, skip, got.numel() - skip),
                             expected.narrow(0, skip, expected.numel() - skip)))
        << name;
    if (skip) continue;
    const torch::Tensor decoded = on_gpu->decompress(got, n);
    ASSERT_EQ(decoded.device(), cuda) << name;
    EXPECT_TRUE(testing::same_bits(decoded.cpu(), on_cpu->decompress(expected, n))) << name;
  }
}

class GpuAlgorithmTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuAlgorithmTest, ExchangesCudaGradientsOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const AlgorithmInfo& info = find_algorithm(GetParam());
  torch::Tensor gpu = exchange_on(info, torch::Device(torch::kCUDA, 0));
  EXPECT_TRUE(torch::isfinite(gpu).all().item<bool>()) << GetParam();
  // On one rank these reduce deterministically: the GPU result must match the CPU's.
  const std::string n = GetParam();
  // The codecs encode on the GPU with the CPU's bytes, their draws included (qsgd, randomk).
  if (n == "dense" || n == "fp16" || n == "topk" || n == "powersgd" || n == "local-sgd" ||
      n == "signsgd" || n == "lag" || n == "dpsgd" || n == "choco-sgd" || n == "qsgd" ||
      n == "randomk" || n == "terngrad" || n == "ef-signsgd") {
    torch::Tensor cpu = exchange_on(info, torch::Device(torch::kCPU));
    EXPECT_TRUE(torch::allclose(gpu, cpu, 1e-4, 1e-4))
        << n << ": max difference " << (gpu - cpu).abs().max().item<double>();
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, GpuAlgorithmTest,
                         ::testing::ValuesIn(testing::registered_algorithm_names()),
                         testing::algorithm_test_name);

}  // namespace
}  // namespace cedar
