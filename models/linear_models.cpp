// The convex models of LAG's experiments (Chen, Giannakis, Sun, Yin, "LAG: Lazily Aggregated
// Gradient for Communication-Efficient Distributed Learning", NeurIPS 2018, Sec. 5: linear and
// logistic regression), for the regression data sets (datasets/regression.h), whose samples are
// feature vectors of d = in_channels x image_size^2 values.
//
//   linear    θ ∈ R^d, no bias: f(θ) = (1/2n) Σ_i (x_iᵀθ − y_i)²   (mean over the n samples)
//   logistic  θ ∈ R^d, no bias, labels y_i ∈ {−1, +1}:
//             f(θ) = (1/n) Σ_i log(1 + exp(−y_i x_iᵀθ)) + (λ/2)‖θ‖²,  λ = ModelSpec::l2
//
// The paper writes the SUM over the samples of worker m, L_m(θ) = Σ_i ℓ_i(θ) (+ (λ/2)‖θ‖² in
// its logistic experiments), and steps θ ← θ − α Σ_m ∇L_m with α = 1/L, L the smoothness of
// Σ_m L_m. Cedar's workers average their mean losses: with M shards of n samples each, f =
// (Σ_m L_m)/(M n) for λ_Cedar = λ_paper / n, and the learning rate 1/L_f (L_f the smoothness of
// f) gives the paper's iterates. θ starts at 0, as in the authors' code.
//
// The output and the loss are computed in float64 from the float32 parameters, so the objective
// (and the optimality gap f(θ) − f* the trainer records) is exact to float64 for the float32
// iterate; the gradient returns to float32 for the exchange.
#include <torch/torch.h>

#include "models/model.h"

namespace cedar {
namespace {

class LinearModel : public Model {
 public:
  explicit LinearModel(const ModelSpec& spec) {
    weight_ = register_parameter(
        "weight", torch::zeros({spec.in_channels * spec.image_size * spec.image_size}));
  }
  torch::Tensor forward(torch::Tensor x) override {
    return torch::mv(x.flatten(1).to(torch::kDouble), weight_.to(torch::kDouble));
  }

 protected:
  torch::Tensor weight_;
};

class LinearRegression final : public LinearModel {
 public:
  using LinearModel::LinearModel;
  torch::Tensor loss(const torch::Tensor& out, const torch::Tensor& target) override {
    return 0.5 * (out - target.to(torch::kDouble)).square().mean();
  }
  // Not a classifier: nothing is "right".
  torch::Tensor correct(const torch::Tensor& out, const torch::Tensor&) override {
    return torch::zeros({}, out.options());
  }
};

class LogisticRegression final : public LinearModel {
 public:
  explicit LogisticRegression(const ModelSpec& spec) : LinearModel(spec), l2_(spec.l2) {}
  torch::Tensor loss(const torch::Tensor& out, const torch::Tensor& target) override {
    // log(1 + exp(−y·z)) = softplus(−y·z), stable for large |z|.
    const auto data = torch::softplus(-target.to(torch::kDouble) * out).mean();
    if (l2_ == 0) return data;
    return data + 0.5 * l2_ * weight_.to(torch::kDouble).square().sum();
  }
  // A prediction is right when x·θ has the label's sign (0 counts as +1).
  torch::Tensor correct(const torch::Tensor& out, const torch::Tensor& target) override {
    return torch::where(out >= 0, 1.0, -1.0).eq(target.to(torch::kDouble)).sum();
  }

 private:
  double l2_;
};

void check_l2(const ModelSpec& spec) {
  if (!(spec.l2 >= 0))
    throw std::invalid_argument("model '" + spec.name + "': l2 must be >= 0, got " +
                                std::to_string(spec.l2));
}

}  // namespace

std::shared_ptr<Model> make_linear_regression(const ModelSpec& spec) {
  if (spec.l2 != 0)
    throw std::invalid_argument(
        "model 'linear': l2 is logistic regression's regulariser; least "
        "squares has none (set model.l2: 0)");
  return std::make_shared<LinearRegression>(spec);
}

std::shared_ptr<Model> make_logistic_regression(const ModelSpec& spec) {
  check_l2(spec);
  return std::make_shared<LogisticRegression>(spec);
}

}  // namespace cedar
