// Bytes per step against oracles written here from the models' parameter shapes and each paper's
// definition of what travels — not from the encoders' own size functions — on the papers' models:
// CIFAR ResNet-20, ResNet-18 (CIFAR stem) and VGG-16, two in-process ranks, one step each.
//   dense      4 bytes per gradient element
//   fp16       2 bytes per element
//   signSGD    1 bit per element, each tensor packed into whole bytes
//   TernGrad   2 bits per element per tensor in whole bytes, plus one fp32 scaler per tensor
//   QSGD       (bits + 1) bits per element per tensor in whole bytes, plus one fp32 norm per
//              bucket of 512 elements of a tensor
//   natural    9 bits (sign and 8-bit exponent) per element per tensor in whole bytes
//   1-bit SGD  1 bit per element per tensor in whole bytes, plus two fp32 means per tensor
//   8-bit      1 byte per element, plus one fp32 scale per tensor (GRACE's u8bit)
//   top-k, random-k with scope: global   k = ⌈ratio·N⌉ over the model's N elements: (int32 index,
//              fp32 value) pairs for top-k, the values alone for random-k's shared indices
//   PowerSGD   rank r: (n + m)·r floats for each n × m matrix where that is less than half of n·m,
//              the matrix itself otherwise, every 1-D tensor as it is
//   DGC        steady state at 99.9% sparsity: (int32 index, fp32 value) for ⌈n/1000⌉ entries of
//              every tensor of 2 or more dimensions, 1-D tensors dense, and the 8-byte count of
//              the sparse allgather
#include <gtest/gtest.h>
#include <torch/types.h>

#include <mutex>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "models/model.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using Shapes = std::vector<std::vector<int64_t>>;
using testing::ceil_div;

Shapes model_shapes(const std::string& name, bool small_input) {
  ModelSpec ms;
  ms.name = name;
  ms.in_channels = 3;
  ms.num_classes = 10;
  ms.image_size = 32;
  ms.small_input = small_input;
  auto model = make_model(ms);
  Shapes out;
  for (const auto& p : model->parameters()) out.push_back(p.sizes().vec());
  return out;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Each of the two ranks' gradients for a model of `shapes`: normal values from the rank's seeded
// generator, drawn once and given to every algorithm measured on the model.
struct RankGradients {
  Shapes shapes;
  std::vector<at::Tensor> flat;  // by rank
};

RankGradients rank_gradients(const Shapes& shapes) {
  int64_t elements = 0;
  for (const auto& s : shapes) elements += numel(s);
  RankGradients g{shapes, {}};
  for (int rank = 0; rank < 2; ++rank)
    g.flat.push_back(at::randn({elements}, make_generator(11, rank, 0)));
  return g;
}

// Rank 0's payload bytes for one step of `algorithm` on a bucket of the gradients' shapes (the
// whole model in one bucket, as with the default 25 MiB buckets for ResNet-20), at epoch `epoch`.
int64_t measured_payload(const RankGradients& gradients, const std::string& algorithm,
                         const std::string& yaml, int64_t epoch = 0) {
  int64_t payload = -1;
  std::mutex mu;
  run_ranks(2, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto alg = find_algorithm(algorithm).make(YAML::Load(yaml), Source{}, nullptr);
    GradBucket b = testing::bucket_of_shapes(gradients.shapes);
    std::vector<NamedTensor> params;
    for (const auto& e : b.entries) params.push_back({e.name, e.param});
    alg->setup(params, comm);
    ASSERT_EQ(b.flat.numel(), gradients.flat[static_cast<size_t>(comm.rank())].numel());
    b.flat.copy_(gradients.flat[static_cast<size_t>(comm.rank())]);
    StepContext ctx;
    ctx.epoch = epoch;
    ctx.steps_per_epoch = 100;
    ctx.step = epoch * 100;
    ctx.lr = 0.1;
    comm.reset_step();
    alg->reduce_gradients(b, comm, ctx);
    if (comm.rank() == 0) {
      std::lock_guard<std::mutex> lock(mu);
      payload = comm.step().payload_bytes;
    }
  });
  return payload;
}

struct Oracles {
  int64_t elements = 0, dense = 0, fp16 = 0, sign = 0, terngrad = 0, natural = 0, onebit = 0,
          eightbit = 0, dgc = 0;
  int64_t qsgd(int bits) const { return qsgd_bytes[bits]; }
  int64_t qsgd_bytes[9] = {0};
  int64_t powersgd_floats(int rank) const {
    int64_t floats = 0;
    for (const auto& s : shapes) {
      const int64_t n_all = numel(s);
      if (s.size() < 2) {
        floats += n_all;
        continue;
      }
      const int64_t n = s[0], m = n_all / n, r = std::min({n, m, int64_t(rank)});
      floats += 2 * (n + m) * r < n * m ? (n + m) * r : n * m;
    }
    return floats;
  }
  Shapes shapes;
};

Oracles oracles(const Shapes& shapes) {
  Oracles o;
  o.shapes = shapes;
  int64_t sparse_entries = 0, dense_1d = 0;
  for (const auto& s : shapes) {
    const int64_t n = numel(s);
    o.elements += n;
    o.fp16 += 2 * n;
    o.sign += ceil_div(n, 8);
    o.terngrad += 4 + ceil_div(2 * n, 8);
    o.natural += ceil_div(9 * n, 8);
    o.onebit += 8 + ceil_div(n, 8);
    o.eightbit += 4 + n;
    for (int bits : {2, 4, 8})
      o.qsgd_bytes[bits] += 4 * ceil_div(n, 512) + ceil_div((bits + 1) * n, 8);
    if (s.size() >= 2)
      sparse_entries += ceil_div(n, 1000);
    else
      dense_1d += n;
  }
  o.dense = 4 * o.elements;
  o.dgc = 8 * sparse_entries + 8 + 4 * dense_1d;
  return o;
}

class ByteOracle : public ::testing::TestWithParam<std::pair<std::string, bool>> {};

TEST_P(ByteOracle, EveryAlgorithmSendsWhatItsPaperDefines) {
  const auto& [model, small_input] = GetParam();
  const Shapes shapes = model_shapes(model, small_input);
  const Oracles o = oracles(shapes);
  const RankGradients g = rank_gradients(shapes);
  EXPECT_EQ(measured_payload(g, "dense", "{}"), o.dense) << model;
  EXPECT_EQ(measured_payload(g, "fp16", "{}"), o.fp16) << model;
  EXPECT_EQ(measured_payload(g, "signsgd", "{}"), o.sign) << model;
  EXPECT_EQ(measured_payload(g, "terngrad", "{}"), o.terngrad) << model;
  for (int bits : {2, 4, 8})
    EXPECT_EQ(measured_payload(g, "qsgd", "{bits: " + std::to_string(bits) + "}"), o.qsgd(bits))
        << model << " " << bits << " bits";
  EXPECT_EQ(measured_payload(g, "natural", "{}"), o.natural) << model;
  EXPECT_EQ(measured_payload(g, "onebit", "{}"), o.onebit) << model;
  EXPECT_EQ(measured_payload(g, "eightbit", "{}"), o.eightbit) << model;
  const int64_t global_k = ceil_div(o.elements, 100);  // ratio 0.01
  EXPECT_EQ(measured_payload(g, "topk", "{ratio: 0.01, scope: global}"), 8 * global_k) << model;
  EXPECT_EQ(measured_payload(g, "randomk", "{ratio: 0.01, scope: global}"), 4 * global_k) << model;
  for (int rank : {1, 2, 4})
    EXPECT_EQ(measured_payload(g, "powersgd", "{rank: " + std::to_string(rank) + "}"),
              4 * o.powersgd_floats(rank))
        << model << " rank " << rank;
  // upper_bound 1: exactly k entries per tensor (the default lets up to 1.3k through).
  EXPECT_EQ(measured_payload(g, "dgc", "{upper_bound: 1}", /*epoch=*/10), o.dgc) << model;
}

INSTANTIATE_TEST_SUITE_P(PapersModels, ByteOracle,
                         ::testing::Values(std::make_pair(std::string("resnet20"), true),
                                           std::make_pair(std::string("resnet18"), true),
                                           std::make_pair(std::string("vgg16"), true)),
                         [](const auto& info) { return info.param.first; });

// PowerSGD's headline (Vogels et al. 2019, Table 3: ResNet-18 on CIFAR-10, rank 2 sends 136x
// less than full-precision SGD): the oracle's ratio on the same model.
TEST(ByteOracle, PowerSgdRankTwoOnResNet18IsThePapers136x) {
  const Oracles o = oracles(model_shapes("resnet18", true));
  const double ratio = double(o.elements) / double(o.powersgd_floats(2));
  EXPECT_NEAR(ratio, 136, 1.0) << o.elements << " / " << o.powersgd_floats(2);
}

}  // namespace
}  // namespace cedar
