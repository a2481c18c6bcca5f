// CHOCO-SGD's one-pass update (algorithms/gossip/choco_update.h): with the rounding the probe
// finds, each form (portable, AVX2 with FMA where the CPU has it) leaves in the public copy, the
// mixed copies and the model, bit for bit, what CHOCO-SGD's six LibTorch operations leave on the
// decoded differences, from those values or from sign bits, for 0 to 3 neighbours, lengths around
// the 8-element step and LibTorch's own, and inputs holding signed zeros, infinities, NaNs and
// subnormals (one such value per element, so that no two different NaNs meet). Each rounding is its
// formula, and the two differ on these inputs.
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

// The arrays of one update: q_self, the neighbours' q, hat, mixed, x; with `bits`, q_self and q
// are the decodings of sign bits (one packed tensor per difference, and its two values).
struct Arrays {
  at::Tensor q_self, hat, mixed, x;
  std::vector<at::Tensor> q;
  std::vector<at::Tensor> bits;  // q_self's, then each q's
  std::vector<std::pair<float, float>> two_values;
  Arrays clone() const {
    Arrays c{q_self.clone(), hat.clone(), mixed.clone(), x.clone(), {}, bits, two_values};
    for (const auto& t : q) c.q.push_back(t.clone());
    return c;
  }
};

// Sign bits for n elements and their decoding to (one, zero), by hand.
std::pair<at::Tensor, at::Tensor> sign_bits(int64_t n, int seed, float one, float zero) {
  at::Tensor bits = at::randint(0, 256, {(n + 7) / 8}, make_generator(seed, 9, n), at::kByte);
  return {bits, testing::decode_sign_bits(bits.data_ptr<uint8_t>(), n, one, zero)};
}

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
  Arrays r{array(0, 0.01), array(1, 1.0), array(2, 1.0), array(3, 1.0), {}, {}, {}};
  for (int j = 0; j < k; ++j) r.q.push_back(array(4 + j, 0.01));
  return r;
}

// The same with q_self and q decoded from sign bits (the last difference's scale an infinity).
Arrays sign_arrays(int64_t n, int k, int seed) {
  Arrays r = update_arrays(n, k, seed);
  for (int j = 0; j <= k; ++j) {
    const float scale = j == k && k > 0 ? std::numeric_limits<float>::infinity()
                                        : 0.01f * static_cast<float>(j + 1);
    auto [bits, decoded] = sign_bits(n, seed + j, scale, -scale);
    (j == 0 ? r.q_self : r.q[static_cast<size_t>(j - 1)]) = decoded;
    r.bits.push_back(bits);
    r.two_values.push_back({scale, -scale});
  }
  return r;
}

// The update from the decoded values, or from the bits where `a` has them.
void run_update(bool avx2, MulAdd rounding, Arrays& a) {
  std::vector<Differences> q;
  if (a.bits.empty()) {
    q.push_back({a.q_self.data_ptr<float>()});
    for (const auto& t : a.q) q.push_back({t.data_ptr<float>()});
  } else {
    for (size_t j = 0; j < a.bits.size(); ++j)
      q.push_back(
          {nullptr, a.bits[j].data_ptr<uint8_t>(), a.two_values[j].first, a.two_values[j].second});
  }
  simd_impl::choco_update(avx2, rounding, q[0], q.data() + 1, static_cast<int>(q.size() - 1),
                          static_cast<float>(kWeight), static_cast<float>(kGamma),
                          a.hat.data_ptr<float>(), a.mixed.data_ptr<float>(), a.x.data_ptr<float>(),
                          a.x.numel());
}

TEST(ChocoUpdate, OnePassGivesTheBitsOfTheLibTorchOperations) {
  const std::optional<MulAdd> rounding = libtorch_add_alpha();
  ASSERT_TRUE(rounding.has_value()) << "LibTorch's add_ matched neither rounding";
  for (bool avx2 : update_forms())
    for (bool bits : {false, true})
      for (int k = 0; k <= 3; ++k)
        for (int64_t n : kUpdateLengths) {
          Arrays mine = bits ? sign_arrays(n, k, 1) : update_arrays(n, k, 1);
          Arrays want = mine.clone();
          at::Tensor sum = want.q_self.clone();
          for (const auto& q : want.q) sum.add_(q);
          want.hat.add_(want.q_self);
          want.mixed.add_(sum, kWeight);
          want.x.add_(want.mixed - want.hat, kGamma);
          run_update(avx2, *rounding, mine);
          const std::string what = std::string(avx2 ? "AVX2" : "portable") + ", " +
                                   (bits ? "bits, " : "values, ") + std::to_string(k) +
                                   " neighbours, " + std::to_string(n);
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

TEST(ChocoUpdate, DifferencesOfTwoKindsAreRefused) {
  const float v = 0;
  const uint8_t b = 0;
  float hat = 0, mixed = 0, x = 0;
  const Differences values{&v}, bits{nullptr, &b, 1, -1}, both{&v, &b, 1, -1};
  EXPECT_THROW(choco_update(MulAdd::kFused, values, &bits, 1, 0.5f, 0.5f, &hat, &mixed, &x, 1),
               std::invalid_argument);
  EXPECT_THROW(choco_update(MulAdd::kFused, both, nullptr, 0, 0.5f, 0.5f, &hat, &mixed, &x, 1),
               std::invalid_argument);
  EXPECT_THROW(
      choco_update(MulAdd::kFused, Differences{}, nullptr, 0, 0.5f, 0.5f, &hat, &mixed, &x, 1),
      std::invalid_argument);
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
          const float m =
              rounding == MulAdd::kFused ? std::fma(w, sum, m0) : rounded_apart(m0, w, sum);
          const float x1 = rounding == MulAdd::kFused ? std::fma(gamma, m - h, x0)
                                                      : rounded_apart(x0, gamma, m - h);
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
      if (n > 100) {
        EXPECT_FALSE(same_bits(x_of[0], x_of[1])) << "the roundings agree everywhere";
      }
    }
}

}  // namespace
}  // namespace cedar
