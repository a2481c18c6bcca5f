// The GPU path (every test skips without a CUDA device): the NCCL communicator on one rank, the
// codecs encoding on the GPU, and every registered algorithm exchanging CUDA gradients through a
// metered communicator that checks each tensor's device — its output stays on the GPU, is finite,
// meters what the CPU run meters, and for the device-independent algorithms equals the CPU's
// update. The same on two and more MPI ranks with CUDA tensors (and NCCL where every rank has a GPU
// of its own) runs under mpirun as the ctest test gpu_mpi_np2 (the GpuMpi tests, skipped when not
// under mpirun). And mixed precision (train.amp) under CUDA autocast through the whole Trainer.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/randomk_codec.h"
#include "algorithms/codecs/topk_codec.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/nccl_communicator.h"
#include "runner/train/evaluator.h"
#include "runner/train/mixed_precision.h"
#include "tests/unit/algorithm_harness.h"
#include "tests/unit/amp_training.h"

namespace cedar {
namespace {

#define SKIP_WITHOUT_GPU()                                                    \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible"; \
  static_assert(true)

constexpr bool kCheckDevices = true;  // in every build: a CPU tensor handed over is an error

TEST(NcclCommunicator, OneRankCollectivesKeepTheirInput) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(nccl_available()) << "this build has no NCCL backend";
  LocalCommunicator bootstrap;
  auto nccl = make_nccl_communicator(bootstrap, 0);
  MeteredCommunicator comm(*nccl, kCheckDevices);
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

// Every codec encodes a CUDA tensor on the GPU (algorithms/codecs/generic_codecs.h) into the
// bytes the CPU kernels write for the same tensor and generator, and decodes them there to the
// same bits. EF-signSGD's scale and 1-bit SGD's two means come from differently ordered fp64
// sums on the GPU: their sign bits must agree (the scale and means are not compared).
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
      {"random-k values", [] { return std::make_unique<RandomKCompressor>(0.05, true); }},
      {"natural", [] { return make_natural_compressor(); }},
      {"onebit", [] { return make_onebit_compressor(); }},
      {"eightbit", [] { return make_eightbit_compressor(); }}};
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
    const int64_t skip = name == "scaled sign" ? 4 : name == "onebit" ? 8 : 0;
    EXPECT_TRUE(torch::equal(got.cpu().narrow(0, skip, got.numel() - skip),
                             expected.narrow(0, skip, expected.numel() - skip)))
        << name;
    if (skip) continue;
    const torch::Tensor decoded = on_gpu->decompress(got, n);
    ASSERT_EQ(decoded.device(), cuda) << name;
    EXPECT_TRUE(testing::same_bits(decoded.cpu(), on_cpu->decompress(expected, n))) << name;
  }
}

// The counters that do not depend on time: what each operation moved.
void expect_same_traffic(const std::map<std::string, CommCounters>& got,
                         const std::map<std::string, CommCounters>& cpu, const std::string& what) {
  ASSERT_EQ(got.size(), cpu.size()) << what << ": other operations than on the CPU";
  for (const auto& [op, c] : cpu) {
    ASSERT_TRUE(got.count(op)) << what << ": no " << op;
    const CommCounters& g = got.at(op);
    EXPECT_EQ(g.calls, c.calls) << what << " " << op;
    EXPECT_EQ(g.elements, c.elements) << what << " " << op;
    EXPECT_EQ(g.payload_bytes, c.payload_bytes) << what << " " << op;
    EXPECT_EQ(g.bus_bytes, c.bus_bytes) << what << " " << op;
  }
}

// `name` on `device_comm` (CUDA tensors) against the same steps on `cpu_comm` (CPU tensors).
void expect_like_the_cpu(const std::string& name, Communicator& device_comm,
                         Communicator& cpu_comm) {
  MeteredCommunicator on_device(device_comm, kCheckDevices);
  MeteredCommunicator on_cpu(cpu_comm, kCheckDevices);
  const testing::DeviceExchange gpu = testing::exchange_on_device(name, on_device);
  const testing::DeviceExchange cpu = testing::exchange_on_device(name, on_cpu);
  EXPECT_TRUE(gpu.stayed_on_device) << name << " moved the bucket off " << device_comm.device();
  EXPECT_TRUE(torch::isfinite(gpu.last_update).all().item<bool>()) << name;
  if (!find_algorithm(name).device_independent) return;
  // The same updates (up to summation order), hence the same decisions and the same traffic.
  EXPECT_TRUE(torch::allclose(gpu.last_update, cpu.last_update, 1e-4, 1e-4))
      << name << ": max difference "
      << (gpu.last_update - cpu.last_update).abs().max().item<double>();
  expect_same_traffic(gpu.totals, cpu.totals, name + " on " + device_comm.backend());
}

class GpuAlgorithmTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuAlgorithmTest, ExchangesCudaGradientsOnTheGpu) {
  SKIP_WITHOUT_GPU();
  LocalCommunicator gpu(torch::Device(torch::kCUDA, 0)), cpu;
  expect_like_the_cpu(GetParam(), gpu, cpu);
}

TEST_P(GpuAlgorithmTest, OneRankNcclMetersWhatTheCpuMeters) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(nccl_available()) << "this build has no NCCL backend";
  LocalCommunicator bootstrap, cpu;
  auto nccl = make_nccl_communicator(bootstrap, 0);
  expect_like_the_cpu(GetParam(), *nccl, cpu);
}

// Under mpirun: every rank on a GPU (local rank mod GPUs, so ranks may share one), MPI carrying
// CUDA tensors (through host buffers unless MPI is CUDA-aware) against MPI on CPU tensors; and
// NCCL where each rank has a GPU of its own (NCCL refuses two ranks on one device).
TEST_P(GpuAlgorithmTest, GpuMpiRanksMeterWhatCpuRanksMeter) {
  if (!launched_under_mpi()) GTEST_SKIP() << "not under mpirun (ctest runs it as gpu_mpi_np2)";
  SKIP_WITHOUT_GPU();
  MpiCommunicator world;
  const int local = world.rank() % static_cast<int>(torch::cuda::device_count());
  const torch::Device gpu(torch::kCUDA, static_cast<c10::DeviceIndex>(local));
  std::unique_ptr<MpiCommunicator> mpi_gpu = world.on_device(gpu);
  expect_like_the_cpu(GetParam(), *mpi_gpu, world);
  if (static_cast<int>(torch::cuda::device_count()) >= world.size() && nccl_available()) {
    auto nccl = make_nccl_communicator(world, local);
    expect_like_the_cpu(GetParam(), *nccl, world);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, GpuAlgorithmTest,
                         ::testing::ValuesIn(gradient_algorithm_names()),
                         testing::algorithm_test_name);

// train.amp on the GPU, one rank: the forward pass and the evaluation run in the autocast dtype,
// the model learns, and an fp16 step whose gradients overflow is skipped (the run of 3 steps with
// step 2 poisoned ends where the run of 2 steps does).
TEST(MixedPrecisionGpu, TrainsUnderCudaAutocastAndSkipsOverflowedFp16Steps) {
  SKIP_WITHOUT_GPU();
  const torch::Device cuda(torch::kCUDA, 0);
  LocalCommunicator gpu(cuda), cpu;  // the algorithm's channel on the GPU, the control on the CPU
  for (const std::string amp : {"bf16", "fp16"}) {
    const at::ScalarType dtype = *amp_dtype(amp);
    auto r = testing::amp_run(amp, 60);
    r.model->to(cuda);
    const double before = evaluate(*r.model, r.data.test, r.data.norm, 256, cuda, cpu, dtype).loss;
    r.model->eval_dtypes.clear();
    testing::train_amp(r, gpu, nullptr, -1, nullptr, -1, cuda, &cpu);
    const double after = evaluate(*r.model, r.data.test, r.data.norm, 256, cuda, cpu, dtype).loss;
    EXPECT_LT(after, 0.7 * before) << amp << ": test loss " << before << " -> " << after;
    EXPECT_EQ(r.model->train_dtypes, std::set<at::ScalarType>{dtype}) << amp;
    EXPECT_EQ(r.model->eval_dtypes, std::set<at::ScalarType>{dtype}) << amp;
  }
  auto two = testing::amp_run("fp16", 2);
  testing::train_amp(two, gpu, nullptr, -1, nullptr, -1, cuda, &cpu);
  auto skipped = testing::amp_run("fp16", 3);
  skipped.model->poison_at = {2};
  testing::train_amp(skipped, gpu, nullptr, -1, nullptr, -1, cuda, &cpu);
  auto a = two.model->parameters(), b = skipped.model->parameters();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::equal(a[i].cpu(), b[i].cpu())) << "parameter " << i;
}

}  // namespace
}  // namespace cedar
