// CHOCO-SGD's one-pass update (algorithms/gossip/choco_update.h): with the rounding the probe
// finds, each form (portable, AVX2 with FMA where the CPU has it) leaves in the public copy, the
// mixed copies and the model, bit for bit, what CHOCO-SGD's six LibTorch operations leave, for 0
// to 3 neighbours, lengths around the 8-element step and LibTorch's own, and inputs holding
// signed zeros, infinities, NaNs and subnormals (one such value per element, so that no two
// different NaNs meet). Each rounding is its formula, and the two differ on these inputs.
#include "algorithms/gossip/choco_update.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

constexpr double kWeight = 1.0 / 3.0, kGamma = 0.4;
const int64_t kUpdateLengths[] = {0, 1, 7, 8, 9, 1013, 40005};

std::vector<bool> update_forms() {
  if (choco_update_avx2_supported()) return {false, true};
  return {false};
}

// The arrays of one update: q_self, the neighbours' q, hat, mixed, x.
struct Arrays {
  at::Tensor q_self, hat, mixed, x;
  std::vector<at::Tensor> q;
  Arrays clone() const {
    Arrays c{q_self.clone(), hat.clone(), mixed.clone(), x.clone(), {}};
    for (const auto& t : q) c.q.push_back(t.clone());
    return c;
  }
};

// Normal values; array a holds a special value at the elements i with i mod 11 == a (so each
// element has at most one), cycling through the specials.
Arrays update_arrays(int64_t n, int k, int seed) {
  at::Generator gen = make_generator(seed, k, n);
  auto array = [&](int a, double scale) {
    at::Tensor t = at::randn({n}, gen) * scale;
    const float specials[] = {0.0f,
                              -0.0f,
                              std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              1e-45f,
                              -3e-39f,
                              3e38f};
    float* p = t.data_ptr<float>();
    for (int64_t i = a; i < n; i += 11) p[i] = specials[(i / 11) % 8];
    return t;
  };
  Arrays r{array(0, 0.01), array(1, 1.0), array(2, 1.0), array(3, 1.0), {}};
  for (int j = 0; j < k; ++j) r.q.push_back(array(4 + j, 0.01));
  return r;
}

void run_update(bool avx2, MulAdd rounding, Arrays& a) {
  std::vector<const float*> q;
  for (const auto& t : a.q) q.push_back(t.data_ptr<float>());
  simd_impl::choco_update(avx2, rounding, a.q_self.data_ptr<float>(), q.data(),
                          static_cast<int>(q.size()), static_cast<float>(kWeight),
                          static_cast<float>(kGamma), a.hat.data_ptr<float>(),
                          a.mixed.data_ptr<float>(), a.x.data_ptr<float>(), a.x.numel());
}

TEST(ChocoUpdate, OnePassGivesTheBitsOfTheLibTorchOperations) {
  const std::optional<MulAdd> rounding = libtorch_add_alpha();
  ASSERT_TRUE(rounding.has_value()) << "LibTorch's add_ matched neither rounding";
  for (bool avx2 : update_forms())
    for (int k = 0; k <= 3; ++k)
      for (int64_t n : kUpdateLengths) {
        Arrays mine = update_arrays(n, k, 1);
        Arrays want = mine.clone();
        at::Tensor sum = want.q_self.clone();
        for (const auto& q : want.q) sum.add_(q);
        want.hat.add_(want.q_self);
        want.mixed.add_(sum, kWeight);
        want.x.add_(want.mixed - want.hat, kGamma);
        run_update(avx2, *rounding, mine);
        const std::string what = std::string(avx2 ? "AVX2" : "portable") + ", " +
                                 std::to_string(k) + " neighbours, " + std::to_string(n);
        EXPECT_TRUE(same_bits(mine.hat, want.hat)) << "hat, " << what;
        EXPECT_TRUE(same_bits(mine.mixed, want.mixed)) << "mixed, " << what;
        EXPECT_TRUE(same_bits(mine.x, want.x)) << "x, " << what;
      }
}

// self + alpha·other, the product rounded first; volatile keeps the two roundings apart.
float rounded_apart(float self, float alpha, float other) {
  volatile float product = alpha * other;
  return self + product;
}

TEST(ChocoUpdate, EachRoundingIsItsFormulaAndTheyDiffer) {
  const float w = static_cast<float>(kWeight), gamma = static_cast<float>(kGamma);
  for (bool avx2 : update_forms())
    for (int64_t n : {int64_t{9}, int64_t{1013}}) {
      std::vector<at::Tensor> x_of;
      for (MulAdd rounding : {MulAdd::kFused, MulAdd::kSeparate}) {
        Arrays mine = update_arrays(n, 2, 2);
        const Arrays start = mine.clone();
        run_update(avx2, rounding, mine);
        at::Tensor hat = start.hat.clone(), mixed = start.mixed.clone(), x = start.x.clone();
        for (int64_t i = 0; i < n; ++i) {
          const float s = start.q_self[i].item<float>();
          const float sum = (s + start.q[0][i].item<float>()) + start.q[1][i].item<float>();
          const float h = hat[i].item<float>() + s;
          const float m0 = mixed[i].item<float>(), x0 = x[i].item<float>();
          const float m = rounding == MulAdd::kFused ? std::fma(w, sum, m0) : rounded_apart(m0, w, sum);
          const float x1 =
              rounding == MulAdd::kFused ? std::fma(gamma, m - h, x0) : rounded_apart(x0, gamma, m - h);
          hat[i] = h;
          mixed[i] = m;
          x[i] = x1;
        }
        const std::string what = std::string(avx2 ? "AVX2" : "portable") + ", " +
                                 (rounding == MulAdd::kFused ? "fused" : "separate") + ", " +
                                 std::to_string(n);
        EXPECT_TRUE(same_bits(mine.hat, hat)) << what;
        EXPECT_TRUE(same_bits(mine.mixed, mixed)) << what;
        EXPECT_TRUE(same_bits(mine.x, x)) << what;
        x_of.push_back(mine.x);
      }
      if (n > 100) EXPECT_FALSE(same_bits(x_of[0], x_of[1])) << "the roundings agree everywhere";
    }
}

}  // namespace
}  // namespace cedar
