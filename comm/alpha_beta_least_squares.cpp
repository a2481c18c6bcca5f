#include "comm/alpha_beta_least_squares.h"

#include <cmath>
#include <stdexcept>

#include "comm/network_model.h"

namespace cedar {

double relative_cost(const std::vector<TimedSample>& samples, double alpha, double beta) {
  double cost = 0;
  for (const TimedSample& s : samples) {
    const double e = (s.latency_steps * alpha + s.bus_bytes * beta) / s.seconds - 1;
    cost += e * e;
  }
  return cost;
}

AlphaBetaFit fit_alpha_beta(const std::vector<TimedSample>& samples) {
  if (samples.empty()) throw std::invalid_argument("alpha-beta fit: no samples");
  const size_t n = samples.size();
  std::vector<double> x1(n), x2(n);
  double s11 = 0, s22 = 0, s1 = 0, s2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const TimedSample& s = samples[i];
    if (!(s.seconds > 0))
      throw std::invalid_argument("alpha-beta fit: a sample's time is not positive");
    x1[i] = s.latency_steps / s.seconds;
    x2[i] = s.bus_bytes / s.seconds;
    s11 += x1[i] * x1[i], s22 += x2[i] * x2[i], s1 += x1[i], s2 += x2[i];
  }
  AlphaBetaFit f;
  // QR of [x1 x2]: q1 = x1 / r11, v = x2 − r12 q1, q2 = v / r22; then R (α, β) = Qᵀ 1.
  const double r11 = std::sqrt(s11);
  if (r11 > 0) {
    double r12 = 0, c1 = 0;
    for (size_t i = 0; i < n; ++i) r12 += x1[i] / r11 * x2[i], c1 += x1[i] / r11;
    double r22sq = 0, c2 = 0;
    for (size_t i = 0; i < n; ++i) {
      const double v = x2[i] - r12 * x1[i] / r11;
      r22sq += v * v, c2 += v;
    }
    const double r22 = std::sqrt(r22sq);
    if (r22 > 1e-9 * std::sqrt(s22)) {
      f.beta = c2 / r22 / r22;
      f.alpha = (c1 - r12 * f.beta) / r11;
    }
  }
  if (f.alpha > 0 && f.beta > 0) return f;
  f.bounded = true;
  const double a_only = s11 > 0 ? s1 / s11 : 0, b_only = s22 > 0 ? s2 / s22 : 0;
  const bool use_a = relative_cost(samples, a_only, 0) < relative_cost(samples, 0, b_only);
  f.alpha = use_a ? a_only : 0;
  f.beta = use_a ? 0 : b_only;
  return f;
}

TimedSample collective_terms(const std::string& op, int world, double bytes) {
  const double p = world;
  TimedSample t;
  if (op == "allreduce") {
    t.latency_steps = double(allreduce_latency_steps(world));
    t.bus_bytes = world > 1 ? 2 * (p - 1) / p * bytes : 0;
  } else if (op == "allgather" || op == "allgatherv") {
    t.latency_steps = (op == "allgatherv" ? 2 : 1) * double(allgather_latency_steps(world));
    t.bus_bytes = world > 1 ? (p - 1) * bytes : 0;
  } else if (op == "broadcast") {
    t.latency_steps = double(broadcast_latency_steps(world));
    t.bus_bytes = world > 1 ? bytes : 0;
  } else if (op == "sendrecv") {
    t.latency_steps = 1;
    t.bus_bytes = bytes;
  } else {
    throw std::invalid_argument("no alpha-beta form for collective '" + op + "'");
  }
  return t;
}

const std::vector<std::string>& calibrated_collectives() {
  static const std::vector<std::string> ops = {"allreduce", "allgather", "allgatherv", "broadcast",
                                               "sendrecv"};
  return ops;
}

}  // namespace cedar
