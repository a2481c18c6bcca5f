#include "runner/train/experiment.h"

#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "algorithms/algorithm.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/store.h"
#include "runner/train/checkpoint.h"
#include "runner/train/disk_space.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/nccl_communicator.h"
#include "runner/train/log.h"
#include "runner/train/optimizer.h"
#include "runner/train/provenance.h"
#include "runner/train/run_guard.h"
#include "runner/train/trainer.h"
#include "runner/version.h"

namespace cedar {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

std::string host_name() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

torch::Device choose_device(const std::string& wanted, int local_rank) {
  bool cuda = torch::cuda::is_available();
  if (wanted == "cuda" && !cuda) throw ConfigError("train.device: cuda requested but no GPU is visible");
  if (wanted == "cuda" || (wanted == "auto" && cuda))
    return torch::Device(torch::kCUDA, local_rank % static_cast<int>(torch::cuda::device_count()));
  return torch::Device(torch::kCPU);
}

}  // namespace

std::string checkpoint_root(const ExperimentConfig& cfg, const std::string& db_path) {
  return cfg.train.checkpoint_dir.empty() ? db_path + ".checkpoints" : cfg.train.checkpoint_dir;
}

std::string checkpoint_folder(const ExperimentConfig& cfg, const std::string& db_path, int64_t run_id) {
  return checkpoint_root(cfg, db_path) + "/run-" + std::to_string(run_id);
}

int threads_per_rank(int64_t configured) {
  if (configured > 0) return static_cast<int>(configured);
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  int local = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("SLURM_NTASKS_PER_NODE", 1));
  return std::max(1, cores / std::max(1, local));
}

RunOutcome run_experiment(const ExperimentConfig& cfg, const RunOptions& opts) {
  // Communicators: MPI when launched by mpirun/srun, else a single local process.
  std::unique_ptr<Communicator> bootstrap;
  // With overlap the communication thread shares cores with backward: an MPI rank waiting for
  // its peer should yield the core instead of spinning (unless the user chose otherwise).
  if (cfg.train.overlap) setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  if (launched_under_mpi()) bootstrap = std::make_unique<MpiCommunicator>();
  else bootstrap = std::make_unique<LocalCommunicator>();
  const int rank = bootstrap->rank();
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("SLURM_LOCALID", 0));
  torch::Device device = choose_device(cfg.train.device, local_rank);
  std::unique_ptr<Communicator> gpu_comm;
  if (device.is_cuda()) gpu_comm = make_nccl_communicator(*bootstrap, device.index());
  Communicator& backend = gpu_comm ? *gpu_comm : *bootstrap;
  MeteredCommunicator metered(backend);
  if (cfg.train.overlap && device.is_cuda())
    throw ConfigError("train.overlap: not supported with the NCCL backend (device cuda) yet");
  if (cfg.train.overlap && launched_under_mpi() && !mpi_threads_serialized())
    throw ConfigError("train.overlap: this MPI library does not provide MPI_THREAD_SERIALIZED");
  const NetworkProfile emulated = find_network_profile(cfg.network.profile);
  if (cfg.network.emulate) metered.emulate(&emulated);

  const int threads = threads_per_rank(cfg.train.threads);
  torch::set_num_threads(threads);
  torch::manual_seed(cfg.train.seed);

  // Validate everything that can be validated before the record is written.
  const AlgorithmInfo& info = find_algorithm(cfg.algorithm);
  std::string algorithm_yaml;
  auto algorithm = info.make(cfg.algorithm_params, cfg.source, &algorithm_yaml);
  const std::string momentum_note = momentum_warning(cfg.optimizer, *algorithm, cfg.algorithm);
  if (rank == 0 && !momentum_note.empty()) log_warn(momentum_note);
  DatasetSpec ds;
  ds.name = cfg.data.name;
  ds.root = cfg.data.root;
  ds.train_limit = cfg.data.train_limit;
  ds.test_limit = cfg.data.test_limit;
  ds.augment = cfg.data.augment;
  ds.num_classes = cfg.data.num_classes;
  ds.per_class = cfg.data.per_class;
  if (cfg.data.image_size > 0) ds.image_size = cfg.data.image_size;
  ds.seed = cfg.train.seed;
  LoadedDataset data = load_dataset(ds);
  ModelSpec ms;
  ms.name = cfg.model.name;
  ms.in_channels = data.train.channels;
  ms.num_classes = data.train.num_classes;
  ms.image_size = data.train.height;
  ms.small_input = cfg.model.small_input;
  auto model = make_model(ms);
  model->to(device);

  // A full disk is an error now, not in the middle of training: the database grows by about
  // half a kilobyte per step; a checkpoint holds the parameters, buffers, momentum and algorithm
  // state (about four times the parameters), twice while a new one replaces the old.
  {
    const int64_t per_step = data.train.count / std::max<int64_t>(1, cfg.train.batch_size * backend.size());
    const int64_t steps = cfg.train.max_steps > 0 ? cfg.train.max_steps : cfg.train.epochs * per_step;
    if (rank == 0) require_free_space(opts.db_path, (1 << 20) + 512 * steps, "the results database");
    if (cfg.train.checkpoint)
      require_free_space(checkpoint_root(cfg, opts.db_path), (1 << 20) + 8 * 4 * count_parameters(*model),
                         "checkpoints");
  }

  std::unique_ptr<ResultStore> store;
  RunOutcome outcome;
  outcome.world_size = backend.size();
  std::string resolved = resolved_yaml(cfg, algorithm_yaml);
  const std::string fingerprint = run_fingerprint(resolved, backend.size());
  // Rank 0 decides whether this continues a failed run from its checkpoint; every rank learns
  // the run id and the checkpoint step from it.
  auto decision = torch::tensor({int64_t{-1}, int64_t{-1}}, torch::kInt64);
  if (rank == 0) {
    store = std::make_unique<ResultStore>(opts.db_path);
    if (opts.resume && cfg.train.checkpoint) {
      store->mark_stale_runs();
      if (int64_t id = store->find_resumable(fingerprint)) {
        CheckpointDir dir(checkpoint_folder(cfg, opts.db_path, id), 0, backend.size());
        const int64_t step = dir.latest();
        if (step >= 0) {
          store->reopen_run(id, step);
          decision[0] = id;
          decision[1] = step;
        }
      }
    }
  }
  bootstrap->broadcast(decision, 0);
  outcome.resumed_from_step = decision[1].item<int64_t>();
  if (rank == 0 && outcome.resumed_from_step >= 0) {
    outcome.run_id = decision[0].item<int64_t>();
    set_active_run(opts.db_path, outcome.run_id);
  } else if (rank == 0) {
    RunRecord rec;
    rec.suite = cfg.suite;
    rec.name = cfg.name;
    rec.algorithm = cfg.algorithm;
    rec.model = cfg.model.name;
    rec.dataset = cfg.data.name;
    rec.world_size = backend.size();
    rec.seed = static_cast<int64_t>(cfg.train.seed);
    rec.config = resolved;
    rec.config_hash = fingerprint;
    rec.code_version = kCedarVersion;
    rec.host = host_name();
    rec.backend = backend.backend();
    rec.network = cfg.network.profile;
    rec.threads = threads;
    rec.parameters = count_parameters(*model);
    rec.effective_momentum = effective_momentum(cfg.optimizer, *algorithm);
    rec.provenance = collect_provenance(threads, device.is_cuda() ? device.index() : -1);
    outcome.run_id = store->begin_run(rec);
    set_active_run(opts.db_path, outcome.run_id);
  }
  // Every rank checks its checkpoint folder before training, so an unwritable one fails now.
  auto run_id_tensor = torch::tensor({outcome.run_id}, torch::kInt64);
  bootstrap->broadcast(run_id_tensor, 0);
  const int64_t run_id = run_id_tensor[0].item<int64_t>();
  std::unique_ptr<CheckpointDir> checkpoints;
  if (cfg.train.checkpoint) {
    checkpoints = std::make_unique<CheckpointDir>(checkpoint_folder(cfg, opts.db_path, run_id),
                                                  rank, backend.size());
    try {
      checkpoints->prepare();
    } catch (const std::exception& e) {
      if (store) {
        store->finish_run(run_id, "failed", e.what(), RunSummary{});
        clear_active_run();
      }
      throw;
    }
  }
  if (rank == 0 && !opts.quiet)
    log_info(strprintf("run %lld '%s': %s on %s / %s, %d rank(s) x %d thread(s), backend %s%s",
                       static_cast<long long>(outcome.run_id), cfg.name.c_str(), cfg.algorithm.c_str(),
                       cfg.model.name.c_str(), cfg.data.name.c_str(), backend.size(), threads,
                       backend.backend().c_str(),
                       outcome.resumed_from_step >= 0
                           ? strprintf(", resumed after step %lld",
                                       static_cast<long long>(outcome.resumed_from_step)).c_str()
                           : ""));

  Trainer trainer(cfg, model, data, std::move(algorithm), metered, *bootstrap, store.get(),
                  outcome.run_id, device, opts.quiet);
  trainer.set_checkpoints(checkpoints.get(), outcome.resumed_from_step);
  std::string status = "completed", error;
  RunSummary summary;
  try {
    summary = trainer.run();
  } catch (const Diverged& e) {
    status = "diverged";
    error = e.what();
  } catch (const std::exception& e) {
    if (store) {
      store->finish_run(outcome.run_id, "failed", e.what(), summary);
      clear_active_run();
    }
    throw;
  }
  // Per-rank communication totals, gathered to rank 0 through the control channel.
  std::vector<std::string> ops = {"allreduce", "allgather", "allgatherv", "broadcast", "barrier"};
  auto local = torch::zeros({static_cast<int64_t>(ops.size()), 5}, torch::kDouble);
  for (size_t i = 0; i < ops.size(); ++i) {
    auto it = metered.totals().find(ops[i]);
    if (it == metered.totals().end()) continue;
    const CommCounters& c = it->second;
    local[i][0] = double(c.calls);
    local[i][1] = double(c.elements);
    local[i][2] = double(c.payload_bytes);
    local[i][3] = double(c.bus_bytes);
    local[i][4] = c.seconds;
  }
  auto all = bootstrap->allgather(local.reshape({-1})).view({bootstrap->size(), -1, 5});
  if (store) {
    std::vector<CommTotalRow> rows;
    for (int r = 0; r < bootstrap->size(); ++r)
      for (size_t i = 0; i < ops.size(); ++i) {
        auto v = all[r][static_cast<int64_t>(i)];
        if (v[0].item<double>() == 0) continue;
        rows.push_back({r, ops[i], v[0].item<int64_t>(), v[1].item<int64_t>(),
                        v[2].item<int64_t>(), v[3].item<int64_t>(), v[4].item<double>()});
      }
    store->add_comm_totals(outcome.run_id, rows);
    store->finish_run(outcome.run_id, status, error, summary);
    clear_active_run();
    // Completed and diverged runs are final: their checkpoints are not needed any more.
    if (checkpoints) checkpoints->remove();
  }
  outcome.status = status;
  outcome.final_test_accuracy = summary.final_test_accuracy;
  outcome.wall_seconds = summary.wall_seconds;
  outcome.total_payload_bytes = summary.total_payload_bytes;
  return outcome;
}

}  // namespace cedar
