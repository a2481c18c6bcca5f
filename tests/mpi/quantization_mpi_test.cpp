// The quantization algorithms inside the real trainer on real MPI ranks (ResNet-20, synthetic
// data, 3 steps): every rank ends with identical weights that moved, and the metered payload of
// each step equals the encoding's size formula for the model's gradients.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "comm/bus_bytes.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/run_network_profiles.h"
#include "runner/train/trainer.h"
#include "tests/mpi/synthetic_training.h"

namespace cedar {
AlgorithmInfo fp16_algorithm();

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Case {
  std::function<AlgorithmInfo()> factory;
  std::string yaml;
  // Payload bytes of one step given the numel of every gradient tensor.
  std::function<int64_t(const std::vector<int64_t>&)> bytes;
};

int64_t sum_over(const std::vector<int64_t>& numels, const std::function<int64_t(int64_t)>& f) {
  int64_t b = 0;
  for (int64_t n : numels) b += f(n);
  return b;
}

std::vector<Case> cases() {
  return {
      {qsgd_algorithm, "{bits: 4}",
       [](const std::vector<int64_t>& ns) {
         return sum_over(ns, [](int64_t n) { return 4 * ceil_div(n, 512) + ceil_div(5 * n, 8); });
       }},
      {terngrad_algorithm, "{}",
       [](const std::vector<int64_t>& ns) {
         return sum_over(ns, [](int64_t n) { return 4 + ceil_div(n, 4); });
       }},
      {signsgd_algorithm, "{}",
       [](const std::vector<int64_t>& ns) {
         return sum_over(ns, [](int64_t n) { return ceil_div(n, 8); });
       }},
      {ef_signsgd_algorithm, "{}",
       [](const std::vector<int64_t>& ns) {
         return sum_over(ns, [](int64_t n) { return 4 + ceil_div(n, 8); });
       }},
      {fp16_algorithm, "{}",
       [](const std::vector<int64_t>& ns) {
         return sum_over(ns, [](int64_t n) { return 2 * n; });
       }},
  };
}

class QuantizedTraining : public ::testing::TestWithParam<size_t> {};

TEST_P(QuantizedTraining, RanksStayIdenticalAndBytesEqualTheFormula) {
  const Case c = cases()[GetParam()];
  const AlgorithmInfo info = c.factory();
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size();
  ASSERT_GE(n, 2) << "run under mpirun -np 2 or more";

  const int64_t steps = 3;
  // Different initial weights on every rank.
  auto t = testing::synthetic_resnet20(steps, 128, 32, 200 + comm.rank());
  t.cfg.algorithm = info.name;
  auto algorithm = info.make(YAML::Load(c.yaml), Source{}, nullptr);
  Trainer trainer(t.cfg, run_network_profiles(t.cfg), t.model, t.data, std::move(algorithm), comm,
                  mpi, nullptr, -1, torch::Device(torch::kCPU), true);
  std::vector<int64_t> numels;
  for (auto& p : t.model->parameters()) numels.push_back(p.numel());
  // Rank 0's initial weights are the ones every rank starts from after the initial broadcast.
  auto initial = testing::flat_parameters(*t.model);
  comm.inner().broadcast(initial, 0);
  trainer.run();

  auto mine = testing::flat_parameters(*t.model);
  auto all = testing::gather_all(comm, mine);
  for (int r = 1; r < n; ++r)
    EXPECT_TRUE(torch::equal(all[r], all[0])) << info.name << ": rank " << r << " differs";
  EXPECT_GT((mine - initial).abs().max().item<double>(), 0) << info.name << ": no update";
  EXPECT_TRUE(torch::isfinite(mine).all().item<bool>()) << info.name;

  int64_t payload = 0, bus = 0;
  for (const auto& [op, counters] : comm.totals()) {
    EXPECT_TRUE(op == "allgather") << info.name << " used " << op;
    payload += counters.payload_bytes;
    bus += counters.bus_bytes;
  }
  const int64_t per_step = c.bytes(numels);
  EXPECT_EQ(payload, steps * per_step) << info.name;
  // Every allgather's bus bytes are (n-1)/n of what all ranks contribute (rounded per call).
  const int64_t calls = comm.totals().at("allgather").calls;
  const int64_t bus_formula = allgather_bus_bytes(steps * per_step * n, n);
  EXPECT_NEAR(static_cast<double>(bus), static_cast<double>(bus_formula),
              static_cast<double>(calls))
      << info.name;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, QuantizedTraining, ::testing::Range<size_t>(0, 5));

}  // namespace
}  // namespace cedar
