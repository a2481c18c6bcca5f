#include "runner/train/run_results.h"

#include "results/shards.h"
#include "results/uuid.h"
#include "runner/train/checkpoint.h"

namespace cedar {
namespace {

// Steps the latest complete checkpoint of run `uuid` holds (-1: none).
int64_t checkpoint_step(const ExperimentConfig& cfg, const RunOptions& opts,
                        const std::string& uuid, int world_size) {
  return CheckpointDir(checkpoint_folder(cfg, opts.db_path, uuid), 0, world_size).latest();
}

RunRecord record_for(const std::function<RunRecord()>& make_record, const RunResults& r,
                     int64_t attempt) {
  RunRecord rec = make_record();
  rec.uuid = r.uuid;
  rec.attempt = attempt;
  rec.results_mode = r.mode.name();
  rec.filesystem = r.mode.filesystem.type;
  return rec;
}

void open_in_main(RunResults& r, const ExperimentConfig& cfg, const RunOptions& opts,
                  const std::string& fingerprint, int world_size,
                  const std::function<RunRecord()>& make_record) {
  r.path = opts.db_path;
  r.store = std::make_unique<ResultStore>(opts.db_path, Journal::kWal);
  if (opts.resume && cfg.train.checkpoint) {
    r.store->mark_stale_runs();
    if (const int64_t id = r.store->find_resumable(fingerprint)) {
      const std::string uuid = r.store->run_uuid(id);
      const int64_t step = checkpoint_step(cfg, opts, uuid, world_size);
      if (step >= 0) {
        r.store->reopen_run(id, step);
        r.run_id = id;
        r.uuid = uuid;
        r.resumed_step = step;
        return;
      }
    }
  }
  r.uuid = new_uuid();
  r.run_id = r.store->begin_run(record_for(make_record, r, 0));
}

void open_in_shard(RunResults& r, const ExperimentConfig& cfg, const RunOptions& opts,
                   const std::string& fingerprint, int world_size,
                   const std::function<RunRecord()>& make_record) {
  int64_t attempt = 0;
  if (opts.resume && cfg.train.checkpoint) {
    if (const auto previous = find_resumable_run(opts.db_path, fingerprint)) {
      const int64_t step = checkpoint_step(cfg, opts, previous->uuid, world_size);
      if (step >= 0) {
        r.uuid = previous->uuid;
        r.resumed_step = step;
        attempt = next_attempt(opts.db_path, r.uuid);
      }
    }
  }
  if (r.uuid.empty()) r.uuid = new_uuid();
  ShardWriter shard = open_shard(opts.db_path, r.uuid, attempt, r.resumed_step);
  r.shard_lock = std::move(shard.lock);
  r.store = std::move(shard.store);
  r.path = shard.path;
  r.run_id = r.store->begin_run(record_for(make_record, r, attempt));
}

}  // namespace

std::unique_ptr<RunResults> open_run_results(const ExperimentConfig& cfg, const RunOptions& opts,
                                             const std::string& fingerprint, int world_size,
                                             const std::function<RunRecord()>& make_record) {
  auto r = std::make_unique<RunResults>();
  r->mode = resolve_results_mode(opts.results_mode.empty() ? cfg.results.mode : opts.results_mode,
                                 opts.db_path);
  if (r->mode.mode == ResultsMode::kWal)
    open_in_main(*r, cfg, opts, fingerprint, world_size, make_record);
  else
    open_in_shard(*r, cfg, opts, fingerprint, world_size, make_record);
  return r;
}

}  // namespace cedar
