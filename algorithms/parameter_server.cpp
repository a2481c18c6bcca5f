// The parameter server: workers push gradients to server ranks that hold shards of the model,
// apply them with the configured optimizer (momentum lives on the servers) and answer with the
// shard's parameters.
// Papers: M. Li, D. G. Andersen, J. W. Park, A. J. Smola, A. Ahmed, V. Josifovski, J. Long,
// E. J. Shekita, B.-Y. Su, "Scaling Distributed Machine Learning with the Parameter Server",
// OSDI 2014 (the server design, sequential / eventual (asp) consistency); Q. Ho, J. Cipar, H. Cui,
// J. K. Kim, S. Lee, P. B. Gibbons, G. A. Gibson, G. R. Ganger, E. P. Xing, "More Effective
// Distributed ML via a Stale Synchronous Parallel Parameter Server", NIPS 2013 (ssp).
//
// Modes (a version is one applied update of a server's shard):
//   bsp  each round the server waits for one gradient from every worker, applies their average
//        (summed in worker order) and answers every worker: the iterates of dense synchronous
//        SGD with the same global batch.
//   ssp  each gradient is applied as it arrives (scaled by 1/workers, so that one gradient per
//        worker moves the model as one bsp round does); a worker that has completed c gradients
//        may start its next one only while the slowest worker has completed at least c − s
//        (Ho et al.'s clock bound, s = staleness): its pull reply waits until then.
//   asp  as ssp with no bound: nobody waits.
// Every applied gradient's staleness (versions applied between the worker's pull and this
// apply) is recorded. The wire format is runner/ps/protocol.h. Batch-norm statistics are not
// parameters: each worker keeps its own and the evaluated model carries their average
// (runner/ps/worker_buffers.h cites the systems that do the same).
//
// LAG on the server (upload: lag; Chen, Giannakis, Sun, Yin, "LAG: Lazily Aggregated Gradient
// for Communication-Efficient Distributed Learning", NeurIPS 2018, stated there for a parameter
// server): in bsp, a worker whose gradient changed little since its last upload (LAG-WK's rule,
// runner/ps/lag_rule.h) sends nothing (an empty message: the round must still be known to
// be complete), and the server reuses the last gradient that worker uploaded. The worker uploads
// its whole new gradient, not the innovation: the same bytes, and the server's sum of the workers'
// last uploads then equals LAG's aggregate ∇^k = ∇^{k−1} + Σ innovations without rounding drift, so
// with ξ = 0 (every changed gradient uploaded) the run is bsp's, bitwise. Plain gradient steps (no
// momentum), as the paper's.
//
// Hyper-parameters: mode (bsp), servers (1), staleness (1), upload (every), xi (1), history (10);
// see ParameterServerParams.
#include "algorithms/parameter_server.h"

#include <stdexcept>

#include "algorithms/catalog.h"

namespace cedar {

void ParameterServer::reduce_gradients(GradBucket&, Communicator&, StepContext&) {
  throw std::logic_error(
      "ps: the parameter server trains through its own loops (runner/ps/run.h), not "
      "through reduce_gradients");
}

const ParameterServerParams* parameter_server_params(const Algorithm& a) {
  const auto* ps = dynamic_cast<const ParameterServer*>(&a);
  return ps ? &ps->params() : nullptr;
}

AlgorithmInfo parameter_server_algorithm() {
  AlgorithmInfo info = algorithm_info<ParameterServer, ParameterServerParams>(
      "ps",
      "parameter server: server ranks hold model shards and apply the workers' pushed "
      "gradients, bsp / ssp (bounded staleness) / asp",
      "Li et al. Scaling Distributed Machine Learning with the Parameter Server, OSDI 2014; "
      "Ho et al. More Effective Distributed ML via a Stale Synchronous Parallel Parameter "
      "Server, NIPS 2013");
  info.exchanges_gradients = false;
  info.not_lossless_because =
      "trains through the parameter server's own loops, not the trainer: parameter_server_test "
      "and e2e_ps check that bsp is dense SGD's iterates";
  return info;
}

}  // namespace cedar
