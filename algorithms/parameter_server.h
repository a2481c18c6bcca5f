#pragma once
// The parameter server's settings (algorithms/parameter_server.cpp cites the papers). A run with
// algorithm `ps` does not go through the trainer's all-reduce loop: its first `servers` ranks
// hold shards of the model and the other ranks are workers (runner/ps/run.h).
#include <cstdint>
#include <string>

#include "algorithms/algorithm.h"
#include "config/params.h"

namespace cedar {

struct ParameterServerParams {
  std::string mode = "bsp";
  int64_t servers = 1;
  int64_t staleness = 1;
  std::string upload = "every";
  double xi = 1.0;
  int64_t history = 10;
  template <class V>
  void visit(V& v) {
    v("mode", mode,
      "bsp (every round averages one gradient per worker), ssp (a worker may run at most "
      "`staleness` clocks ahead of the slowest) or asp (no waiting)",
      one_of({"bsp", "ssp", "asp"}));
    v("servers", servers,
      "server ranks holding shards of the model (balanced by bytes); the other ranks are workers",
      at_least(1));
    v("staleness", staleness, "ssp: the bound s in clocks (Ho et al.); bsp and asp ignore it",
      at_least(0));
    v("upload", upload,
      "every (each worker pushes every step) or lag (bsp only: LAG-WK's rule, a worker whose "
      "gradient changed little skips its upload and the server reuses its last one)",
      one_of({"every", "lag"}));
    v("xi", xi, "lag: xi, with xi_d = xi/D (paper: 1)", at_least(0));
    v("history", history, "lag: D, the past parameter moves in the threshold (paper: 10)",
      at_least(1));
  }
};

// The algorithm object of a `ps` run: it carries the settings; the parameter server's loops
// (runner/ps/*.h) do the work, so reduce_gradients is never called.
class ParameterServer final : public Algorithm {
 public:
  explicit ParameterServer(const ParameterServerParams& p) : p_(p) {}
  const ParameterServerParams& params() const { return p_; }
  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override;
  // The servers' optimizer runs with optimizer.momentum (the momentum lives there), except under
  // LAG, whose rule is stated for plain gradient steps (algorithms/lag.cpp says why).
  bool applies_momentum() const override { return p_.upload == "lag"; }

 private:
  ParameterServerParams p_;
};

// The settings of `a` when it is the parameter server, else null.
const ParameterServerParams* parameter_server_params(const Algorithm& a);

}  // namespace cedar
