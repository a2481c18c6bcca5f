#include "runner/train/communicators.h"

#include <torch/torch.h>

#include <cstdlib>

#include "algorithms/algorithm.h"
#include "comm/mpi_communicator.h"
#include "comm/nccl_communicator.h"
#include "comm/run_network_profiles.h"
#include "comm/watched_communicator.h"
#include "runner/train/collective_timeout.h"

namespace cedar {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

torch::Device choose_device(const std::string& wanted, int local_rank) {
  bool cuda = torch::cuda::is_available();
  if (wanted == "cuda" && !cuda)
    throw ConfigError("train.device: cuda requested but no GPU is visible");
  if (wanted == "cuda" || (wanted == "auto" && cuda))
    return torch::Device(torch::kCUDA, local_rank % static_cast<int>(torch::cuda::device_count()));
  return torch::Device(torch::kCPU);
}

// network.allreduce on the algorithm's channel: every allreduce the algorithm makes, on it or on
// communicators split from it, runs that scheme.
void use_allreduce_scheme(const ExperimentConfig& cfg, MeteredCommunicator& metered) {
  const AllreduceScheme scheme = parse_allreduce_scheme(cfg.network.allreduce);
  if (scheme != AllreduceScheme::two_level) return metered.use_allreduce(scheme);
  const int per_node = run_ranks_per_node(cfg);
  if (per_node < 1 || metered.size() % per_node != 0)
    throw ConfigError("network.allreduce: two_level needs nodes of equal size, but " +
                      std::to_string(per_node) +
                      " ranks per node (network.ranks_per_node, else the launcher's count) do "
                      "not divide the " +
                      std::to_string(metered.size()) + " ranks");
  metered.use_allreduce(scheme, per_node);
}

}  // namespace

std::string run_backend(const std::string& wanted, const torch::Device& device) {
  if (wanted == "nccl" && !device.is_cuda())
    throw ConfigError("train.backend: nccl needs a GPU, but this run is on the CPU (train.device)");
  if (wanted == "auto") return device.is_cuda() ? "nccl" : "mpi";
  return wanted;
}

int local_rank() { return env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("SLURM_LOCALID", 0)); }

int ranks_on_this_node() {
  return env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("SLURM_NTASKS_PER_NODE", 1));
}

int run_ranks_per_node(const ExperimentConfig& cfg) {
  return cfg.network.ranks_per_node > 0 ? cfg.network.ranks_per_node : ranks_on_this_node();
}

std::unique_ptr<RunCommunicators> make_communicators(const ExperimentConfig& cfg) {
  auto c = std::make_unique<RunCommunicators>();
  // With overlap the communication thread shares cores with backward, and a parameter server's
  // ranks wait for one another's messages by design: an MPI rank waiting for its peers should
  // sleep instead of spinning on a core that computation needs (and yield where it still polls
  // inside MPI, unless the user chose otherwise).
  const bool idle_wait = cfg.train.overlap || !find_algorithm(cfg.algorithm).exchanges_gradients;
  if (idle_wait) setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  if (launched_under_mpi()) {
    auto mpi = std::make_unique<MpiCommunicator>();
    mpi->set_idle_wait(idle_wait);
    c->bootstrap = std::move(mpi);
  } else {
    c->bootstrap = std::make_unique<LocalCommunicator>();
  }
  c->device = choose_device(cfg.train.device, local_rank());
  if (cfg.train.overlap && c->device.is_cuda())
    throw ConfigError("train.overlap: not supported on a GPU (train.device cuda) yet");
  const std::string backend = run_backend(cfg.train.backend, c->device);
  if (backend == "nccl") {
    c->gpu = make_nccl_communicator(*c->bootstrap, c->device.index());
  } else if (c->device.is_cuda()) {
    // MPI over CUDA tensors, on its own duplicate of the world: the bootstrap stays the CPU
    // channel, and the algorithm's messages never mix with the harness's.
    if (auto* mpi = dynamic_cast<MpiCommunicator*>(c->bootstrap.get()))
      c->gpu = mpi->on_device(c->device);
    else
      c->gpu = std::make_unique<LocalCommunicator>(c->device);
  }
  c->watchdog = make_run_watchdog(cfg.network.collective_timeout_s, c->bootstrap->rank());
  if (c->watchdog) {
    c->watched_bootstrap = std::make_unique<WatchedCommunicator>(*c->bootstrap, *c->watchdog);
    if (c->gpu) c->watched_gpu = std::make_unique<WatchedCommunicator>(*c->gpu, *c->watchdog);
  }
  // The algorithm's channel, watched as the control channel is.
  Communicator& algorithm_channel =
      c->gpu ? (c->watched_gpu ? *c->watched_gpu : *c->gpu) : c->control();
  c->metered = std::make_unique<MeteredCommunicator>(algorithm_channel);
  use_allreduce_scheme(cfg, *c->metered);
  if (cfg.train.overlap && launched_under_mpi() && !mpi_threads_serialized())
    throw ConfigError("train.overlap: this MPI library does not provide MPI_THREAD_SERIALIZED");
  c->profiles = run_network_profiles(cfg);
  if (cfg.network.emulate) {
    // Each level of sub-communicators with its own profile: inside a node, between nodes.
    c->metered->emulate(&c->profiles.inter);
    c->metered->emulate_level("intra", &c->profiles.intra);
    c->metered->emulate_level("inter", &c->profiles.inter);
  }
  return c;
}

}  // namespace cedar
