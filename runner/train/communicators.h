#pragma once
// The communicators of one run on this process: the bootstrap (MPI when launched by mpirun/srun,
// else a single local process; CPU tensors), the device's communicator on a GPU (NCCL, or MPI with
// CUDA tensors: train.backend), and the metered one the algorithm talks through.
#include <torch/types.h>

#include <memory>

#include "comm/collective_watchdog.h"
#include "comm/communicator.h"
#include "comm/metered_communicator.h"
#include "comm/run_network_profiles.h"
#include "config/experiment_config.h"

namespace cedar {

struct RunCommunicators {
  // network.collective_timeout_s: the deadline of every blocking operation on both channels
  // below (null: no limit). Declared first: it outlives the channels it watches.
  std::unique_ptr<CollectiveWatchdog> watchdog;
  // The harness's own channel (unmetered): initial broadcast, step agreement, evaluation sums,
  // the run id and the communication totals.
  std::unique_ptr<Communicator> bootstrap;
  // On a GPU: NCCL, or (train.backend: mpi) MPI over CUDA tensors; null on the CPU.
  std::unique_ptr<Communicator> gpu;
  // With a watchdog: the bootstrap and the GPU's communicator under it (else null).
  std::unique_ptr<Communicator> watched_bootstrap, watched_gpu;
  std::unique_ptr<MeteredCommunicator> metered;  // wraps backend(), watched
  // The run's network profiles, read once: metered emulates them when network.emulate is on
  // (inter between nodes, intra inside one), the trainer models its traffic's seconds on them,
  // and their note goes into the run's record.
  RunNetworkProfiles profiles;
  torch::Device device = torch::Device(torch::kCPU);

  // What the algorithm's traffic goes through: the GPU's communicator, else the bootstrap.
  Communicator& backend() const { return gpu ? *gpu : *bootstrap; }
  // The channel the harness talks through: the bootstrap, watched.
  Communicator& control() const { return watched_bootstrap ? *watched_bootstrap : *bootstrap; }
};

// Starts the communicators and picks this rank's device (train.device) and backend
// (train.backend). Throws ConfigError for a device, backend or overlap the machine or the MPI
// library cannot provide. Held by pointer: the
// metered communicator refers to the others and to the emulated profiles.
std::unique_ptr<RunCommunicators> make_communicators(const ExperimentConfig& cfg);

// This process's rank among the ranks on its node, and their number, as the launcher (Open MPI
// or Slurm) tells them; 0 and 1 without one.
int local_rank();
// The backend train.backend names for a run on `device`: "nccl" or "mpi" (auto: nccl on a GPU).
// Throws ConfigError for nccl on the CPU.
std::string run_backend(const std::string& wanted, const torch::Device& device);
int ranks_on_this_node();
// The ranks of one node as the run sees them: network.ranks_per_node, or when 0 the launcher's
// count (ranks_on_this_node()).
int run_ranks_per_node(const ExperimentConfig& cfg);

}  // namespace cedar
