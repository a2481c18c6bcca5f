#include "runner/train/run_record.h"

#include <torch/torch.h>

#include "algorithms/parameter_server.h"
#include "runner/source_revision.h"
#include "runner/train/optimizer.h"
#include "runner/train/provenance.h"

namespace cedar {

RunRecord make_run_record(const ExperimentConfig& cfg, const std::string& resolved_yaml,
                          const std::string& fingerprint, const Communicator& backend, int threads,
                          torch::Device device, const Model& model, const Algorithm& algorithm) {
  RunRecord rec;
  rec.suite = cfg.suite;
  rec.name = cfg.name;
  rec.algorithm = cfg.algorithm;
  rec.model = cfg.model.name;
  rec.dataset = cfg.data.name;
  rec.world_size = backend.size();
  rec.seed = static_cast<int64_t>(cfg.train.seed);
  rec.config = resolved_yaml;
  rec.config_hash = fingerprint;
  rec.code_version = source_version();
  rec.host = this_host();
  rec.backend = backend.backend();
  rec.network = cfg.network.profile;
  rec.threads = threads;
  rec.parameters = count_parameters(model);
  rec.effective_momentum = effective_momentum(cfg.optimizer, algorithm);
  const ParameterServerParams* ps = parameter_server_params(algorithm);
  rec.servers = ps ? ps->servers : 0;
  rec.workers = backend.size() - rec.servers;
  rec.provenance = collect_provenance(threads, device.is_cuda() ? device.index() : -1);
  return rec;
}

}  // namespace cedar
