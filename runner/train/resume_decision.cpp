#include "runner/train/resume_decision.h"

#include <torch/torch.h>

#include "runner/train/checkpoint.h"

namespace cedar {
namespace {

// Rank 0's decision.
ResumeDecision find_checkpoint_to_resume(ResultStore& store, const ExperimentConfig& cfg,
                                         const RunOptions& opts, const std::string& fingerprint,
                                         int world_size) {
  if (!opts.resume || !cfg.train.checkpoint) return {};
  store.mark_stale_runs();
  const int64_t id = store.find_resumable(fingerprint);
  if (!id) return {};
  CheckpointDir dir(checkpoint_folder(cfg, opts.db_path, id), 0, world_size);
  const int64_t step = dir.latest();
  if (step < 0) return {};
  store.reopen_run(id, step);
  return {id, step};
}

}  // namespace

ResumeDecision decide_resume(ResultStore* store, const ExperimentConfig& cfg,
                             const RunOptions& opts, const std::string& fingerprint, int world_size,
                             Communicator& control) {
  auto decision = torch::tensor({int64_t{-1}, int64_t{-1}}, torch::kInt64);
  if (store) {
    const ResumeDecision mine =
        find_checkpoint_to_resume(*store, cfg, opts, fingerprint, world_size);
    decision[0] = mine.run_id;
    decision[1] = mine.step;
  }
  control.broadcast(decision, 0);
  return {decision[0].item<int64_t>(), decision[1].item<int64_t>()};
}

}  // namespace cedar
