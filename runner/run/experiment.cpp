#include "runner/run/experiment.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/parameter_server.h"
#include "comm/run_network_profiles.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/disk_space.h"
#include "results/results_mode.h"
#include "results/store.h"
#include "runner/ps/run.h"
#include "runner/train/checkpoint.h"
#include "runner/train/collective_timeout.h"
#include "runner/train/comm_totals.h"
#include "runner/train/communicators.h"
#include "runner/train/exchange_schedule.h"
#include "runner/train/log.h"
#include "runner/train/machine_load.h"
#include "runner/train/optimizer.h"
#include "runner/train/run_guard.h"
#include "runner/train/run_record.h"
#include "runner/train/run_results.h"
#include "runner/train/trainer.h"

namespace cedar {
namespace {

// The algorithm of cfg, validated; its resolved parameters go to `algorithm_yaml`. Rank 0 warns
// when optimizer.momentum is not the momentum the updates get.
std::unique_ptr<Algorithm> make_run_algorithm(const ExperimentConfig& cfg, int rank,
                                              std::string& algorithm_yaml) {
  const AlgorithmInfo& info = find_algorithm(cfg.algorithm);
  auto algorithm = info.make(cfg.algorithm_params, cfg.source, &algorithm_yaml);
  algorithm->configure_nodes(run_ranks_per_node(cfg));
  const std::string momentum_note = momentum_warning(cfg.optimizer, *algorithm, cfg.algorithm);
  if (rank == 0 && !momentum_note.empty()) log_warn(momentum_note);
  return algorithm;
}

// The model of cfg shaped for the loaded data, on `device`.
std::shared_ptr<Model> make_run_model(const ExperimentConfig& cfg, const LoadedDataset& data,
                                      torch::Device device) {
  ModelSpec ms;
  ms.name = cfg.model.name;
  ms.in_channels = data.train.channels;
  ms.num_classes = data.train.num_classes;
  ms.image_size = data.train.height;
  ms.small_input = cfg.model.small_input;
  ms.l2 = cfg.model.l2;
  auto model = make_model(ms);
  model->to(device);
  return model;
}

// A full disk is an error now, not in the middle of training (results/disk_space.h estimates what
// the rows and a checkpoint take).
void require_disk_space(const ExperimentConfig& cfg, const std::string& db_path,
                        const LoadedDataset& data, const Model& model, int world_size, int rank) {
  const int64_t per_step =
      data.train.count / std::max<int64_t>(1, cfg.train.batch_size * world_size);
  const int64_t steps = cfg.train.max_steps > 0 ? cfg.train.max_steps : cfg.train.epochs * per_step;
  if (rank == 0) require_free_space(db_path, database_bytes_for(steps), "the results database");
  if (cfg.train.checkpoint)
    require_free_space(checkpoint_root(cfg, db_path), checkpoint_bytes_for(count_parameters(model)),
                       "checkpoints");
}

// Collective on `control`: every rank learns from rank 0 the run's uuid (its checkpoint folder),
// the step it resumes after (-1: a new run), and its record: the file rank 0 writes and the id
// there (whichever rank's watchdog fires marks it failed: runner/train/collective_timeout.h).
struct RunIdentity {
  std::string uuid;
  int64_t resumed_step = -1;
  std::string results_path;
  int64_t run_id = -1;
};

RunIdentity share_run_identity(const RunResults* results, Communicator& control) {
  constexpr int64_t kUuidChars = 36;
  auto t = torch::zeros({kUuidChars + 3}, torch::kInt64);
  if (results) {
    t[0] = results->resumed_step;
    for (int64_t i = 0; i < kUuidChars && i < int64_t(results->uuid.size()); ++i)
      t[i + 1] = static_cast<int64_t>(results->uuid[i]);
    t[kUuidChars + 1] = results->run_id;
    t[kUuidChars + 2] = static_cast<int64_t>(results->path.size());
  }
  control.broadcast(t, 0);
  RunIdentity id;
  id.resumed_step = t[0].item<int64_t>();
  for (int64_t i = 1; i <= kUuidChars; ++i) id.uuid += static_cast<char>(t[i].item<int64_t>());
  id.run_id = t[kUuidChars + 1].item<int64_t>();
  auto path = torch::zeros({t[kUuidChars + 2].item<int64_t>()}, torch::kUInt8);
  if (results) std::copy(results->path.begin(), results->path.end(), path.data_ptr<uint8_t>());
  if (path.numel() > 0) control.broadcast(path, 0);
  id.results_path.assign(reinterpret_cast<const char*>(path.data_ptr<uint8_t>()), path.numel());
  return id;
}

// Every rank checks its checkpoint folder before training, so an unwritable one fails now (and
// rank 0 records the run as failed). Null when checkpoints are off.
std::unique_ptr<CheckpointDir> prepare_checkpoints(const ExperimentConfig& cfg,
                                                   const std::string& db_path,
                                                   const std::string& uuid, int rank,
                                                   int world_size, RunResults* results) {
  if (!cfg.train.checkpoint) return nullptr;
  auto checkpoints =
      std::make_unique<CheckpointDir>(checkpoint_folder(cfg, db_path, uuid), rank, world_size);
  try {
    checkpoints->prepare();
  } catch (const std::exception& e) {
    if (results) {
      results->store->finish_run(results->run_id, "failed", e.what(), RunSummary{});
      clear_active_run();
    }
    throw;
  }
  return checkpoints;
}

void log_run_start(const ExperimentConfig& cfg, const RunOutcome& outcome,
                   const Communicator& backend, int threads, const RunResults& results) {
  const std::string where = results.mode.mode == ResultsMode::kWal
                                ? strprintf("run %lld", static_cast<long long>(outcome.run_id))
                                : "run " + outcome.uuid + " (shard " + outcome.results_path + ")";
  log_info(strprintf("%s '%s': %s on %s / %s, %d rank(s) x %d thread(s), backend %s%s",
                     where.c_str(), cfg.name.c_str(), cfg.algorithm.c_str(), cfg.model.name.c_str(),
                     cfg.data.name.c_str(), backend.size(), threads, backend.backend().c_str(),
                     outcome.resumed_from_step >= 0
                         ? strprintf(", resumed after step %lld",
                                     static_cast<long long>(outcome.resumed_from_step))
                               .c_str()
                         : ""));
}

// How training ended, when it ended as a result (completed or diverged).
struct TrainingEnd {
  std::string status = "completed", error;
  RunSummary summary;
};

// Any other error is recorded as the run's failure (rank 0) and rethrown.
TrainingEnd train(const std::function<RunSummary()>& run, ResultStore* store, int64_t run_id) {
  TrainingEnd end;
  try {
    end.summary = run();
  } catch (const Diverged& e) {
    end.status = "diverged";
    end.error = e.what();
  } catch (const std::exception& e) {
    if (store) {
      store->finish_run(run_id, "failed", e.what(), end.summary);
      clear_active_run();
    }
    throw;
  }
  return end;
}

// Rank 0: the run's communication totals and final status. Completed and diverged runs are final:
// their checkpoints are not needed any more.
void finish_record(ResultStore& store, int64_t run_id, const TrainingEnd& end,
                   const std::vector<CommTotalRow>& totals, const CheckpointDir* checkpoints) {
  store.add_comm_totals(run_id, totals);
  store.finish_run(run_id, end.status, end.error, end.summary);
  clear_active_run();
  if (checkpoints) checkpoints->remove();
}

}  // namespace

RunOutcome run_experiment(const ExperimentConfig& cfg, const RunOptions& opts) {
  const std::unique_ptr<RunCommunicators> comms = make_communicators(cfg);
  Communicator& control = comms->control();
  Communicator& backend = comms->backend();
  const int rank = control.rank();
  const int threads = threads_per_rank(cfg.train.threads);
  torch::set_num_threads(threads);
  torch::manual_seed(cfg.train.seed);

  // Validate everything that can be validated before the record is written.
  std::string algorithm_yaml;
  auto algorithm = make_run_algorithm(cfg, rank, algorithm_yaml);
  check_optimizer_for(cfg.optimizer, *algorithm, cfg.algorithm);
  check_schedule_for(cfg);
  LoadedDataset data = load_dataset(dataset_spec(cfg));
  auto model = make_run_model(cfg, data, comms->device);
  const ParameterServerParams* ps = parameter_server_params(*algorithm);
  if (ps) check_parameter_server_run(cfg, *ps, backend.size(), *model);
  require_disk_space(cfg, opts.db_path, data, *model, backend.size(), rank);

  RunOutcome outcome;
  outcome.world_size = backend.size();
  if (ps) {
    outcome.evaluated_model = "server-held model";
    outcome.payload_of = "per worker";
  }
  const std::string resolved = resolved_yaml(cfg, algorithm_yaml) + comms->profiles.note;
  const std::string fingerprint = run_fingerprint(resolved, backend.size());
  std::unique_ptr<RunResults> results;
  if (rank == 0) {  // the run continued, or a new one
    results = open_run_results(cfg, opts, fingerprint, backend.size(), [&] {
      return make_run_record(cfg, resolved, fingerprint, backend, threads, comms->device, *model,
                             *algorithm);
    });
    outcome.run_id = results->run_id;
    outcome.results_path = results->path;
    set_active_run(results->path, results->run_id);
    set_watched_run(results->path, results->run_id);  // the other ranks learn it below
  }
  const RunIdentity identity = share_run_identity(results.get(), control);
  outcome.uuid = identity.uuid;
  outcome.resumed_from_step = identity.resumed_step;
  set_watched_run(identity.results_path, identity.run_id);
  ResultStore* store = results ? results->store.get() : nullptr;
  // Benchmark only (bench/harness_overhead.sh): CEDAR_BENCH_NO_STEP_ROWS=1 trains without writing
  // step and evaluation rows, the baseline the results store's cost is measured against. The
  // run's record is still opened and finished.
  ResultStore* row_store = std::getenv("CEDAR_BENCH_NO_STEP_ROWS") ? nullptr : store;
  const auto checkpoints =
      prepare_checkpoints(cfg, opts.db_path, identity.uuid, rank, backend.size(), results.get());
  if (rank == 0 && !opts.quiet) log_run_start(cfg, outcome, backend, threads, *results);

  std::unique_ptr<Trainer> trainer;
  std::function<RunSummary()> training;
  if (ps) {
    training = [&] {
      return run_parameter_server(PsRunInputs{
          cfg, *ps, model, data, *comms->metered, control, row_store, outcome.run_id, comms->device,
          opts.quiet, checkpoints.get(), checkpoints ? outcome.resumed_from_step : -1});
    };
  } else {
    trainer = std::make_unique<Trainer>(cfg, comms->profiles, model, data, std::move(algorithm),
                                        *comms->metered, control, row_store, outcome.run_id,
                                        comms->device, opts.quiet);
    trainer->set_checkpoints(checkpoints.get(), outcome.resumed_from_step);
    trainer->set_watchdog(comms->watchdog.get());
    training = [&] { return trainer->run(); };
  }
  const CpuTimeSample cpu_start = sample_cpu_time();
  const TrainingEnd end = train(training, store, outcome.run_id);
  const CpuTimeSample cpu_end = sample_cpu_time();
  // Per-rank communication totals and CPU time, gathered through the control channel; rank 0
  // records them.
  const std::vector<CommTotalRow> totals = gather_comm_totals(*comms->metered, control);
  const std::vector<RankCpu> cpu = gather_rank_cpu(cpu_start, cpu_end, this_host(), control);
  if (store)
    store->set_provenance_entry(outcome.run_id, "machine_load",
                                host_load_json(summarise_host_load(cpu)));
  if (store) finish_record(*store, outcome.run_id, end, totals, checkpoints.get());
  clear_watched_run();
  outcome.status = end.status;
  outcome.final_test_accuracy = end.summary.final_test_accuracy;
  outcome.wall_seconds = end.summary.wall_seconds;
  outcome.total_payload_bytes = end.summary.total_payload_bytes;
  return outcome;
}

}  // namespace cedar
