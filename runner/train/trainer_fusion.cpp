// Tensor fusion from the network model (train.fusion: mgwfbp, optimal or auto;
// runner/train/fusion_schedule.h): before the first step, a few forward and backward passes of
// the run's first batch time when each gradient arrives, rank 0's times go to every rank, and the
// buckets are rebuilt once from the grouping they and the run's network profile give. The passes
// leave no trace in training: the loader, batch-norm statistics and the CPU generator are put
// back and the gradients dropped. The grouping goes into every checkpoint, and a resumed run takes
// it from there rather than timing backward again, so it exchanges the very buckets it did.
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "runner/train/backward_timing.h"
#include "runner/train/buckets.h"
#include "runner/train/communicators.h"
#include "runner/train/log.h"
#include "runner/train/mixed_precision.h"
#include "runner/train/trainer.h"

namespace cedar {
namespace {

constexpr const char* kFusionKey = "trainer.fusion_groups";
// Backward passes timed before the first step: one to warm up (allocations, caches), then the
// median of three per gradient.
constexpr int kUnmeasuredPasses = 1;
constexpr int kMeasuredPasses = 3;

// What the run's log and its record's provenance ("fusion") say of the grouping. `plan` is null
// for a grouping restored from checkpoint `restored_step`.
void report_fusion(const ExperimentConfig& cfg, const std::vector<GradBucket>& buckets,
                   const FusionPlan* plan, const std::vector<FusionLayer>& layers,
                   const AllreduceCost& cost, int64_t restored_step, ResultStore* store,
                   int64_t run_id, bool quiet) {
  nlohmann::ordered_json j;
  j["mode"] = cfg.train.fusion;
  std::string tensors, mib;
  for (const auto& b : buckets) {
    const int64_t bytes = b.flat.numel() * 4;
    j["buckets"].push_back({{"tensors", b.entries.size()}, {"bytes", bytes}});
    tensors += (tensors.empty() ? "" : ", ") + std::to_string(b.entries.size());
    mib += (mib.empty() ? "" : ", ") + strprintf("%.3g", double(bytes) / (1 << 20));
  }
  std::string line =
      strprintf("fusion %s: %zu buckets (tensors %s; MiB %s)", cfg.train.fusion.c_str(),
                buckets.size(), tensors.c_str(), mib.c_str());
  if (plan) {
    double backward = 0;
    for (const auto& l : layers) backward += l.backward_seconds;
    j["backward_seconds"] = backward;
    j["allreduce_startup_seconds"] = cost.startup;
    j["allreduce_seconds_per_byte"] = cost.per_byte;
    j["profile"] = cfg.network.profile;
    j["predicted_exchange_end_seconds"] = plan->predicted_seconds;
    j["size_predicted_exchange_end_seconds"] = plan->size_predicted_seconds;
    if (plan->mode == FusionMode::autotune) j["bucket_mb"] = plan->bucket_mib;
    line += strprintf(
        "; last exchange predicted to end %.4g s after backward's start (%.4g s with %g MiB "
        "buckets) on %s; backward %.4g s, timed on rank 0",
        plan->predicted_seconds, plan->size_predicted_seconds, cfg.train.bucket_mb,
        cfg.network.profile.c_str(), backward);
    if (plan->mode == FusionMode::autotune)
      line += strprintf("; auto chose %g MiB buckets", plan->bucket_mib);
  } else {
    j["restored_from_step"] = restored_step;
    line += "; from the checkpoint of step " + std::to_string(restored_step);
  }
  if (store) store->set_provenance_entry(run_id, "fusion", j.dump());
  if (!quiet) log_info(line);
}

}  // namespace

void Trainer::choose_fusion() {
  const FusionMode mode = parse_fusion_mode(cfg_.train.fusion);
  if (mode == FusionMode::size) return;
  // Rank 0's times, so that every rank builds the same buckets.
  const std::vector<double> mine = measure_gradient_times();
  at::Tensor ready = torch::tensor(mine, torch::kDouble);
  control_.broadcast(ready, 0);
  const std::vector<FusionLayer> layers = fusion_layers(
      params_,
      std::vector<double>(ready.data_ptr<double>(), ready.data_ptr<double>() + ready.numel()));
  const AllreduceScheme scheme = parse_allreduce_scheme(cfg_.network.allreduce);
  const AllreduceCost cost =
      allreduce_cost(scheme, comm_.size(), profiles_.inter, profiles_.intra,
                     scheme == AllreduceScheme::two_level ? run_ranks_per_node(cfg_) : 1);
  const FusionPlan plan = plan_fusion(mode, layers, cost, cfg_.train.bucket_mb);
  use_fusion_groups(plan.groups);
  if (comm_.rank() == 0)
    report_fusion(cfg_, buckets_, &plan, layers, cost, -1, store_, run_id_, quiet_);
}

std::vector<double> Trainer::measure_gradient_times() {
  // The first batch the run trains on; the loader goes back to it.
  const LoaderPosition start = loader_->position();
  Batch batch;
  if (!loader_->next(batch))
    throw std::runtime_error("train.fusion " + cfg_.train.fusion +
                             ": no training batch to time backward on");
  loader_->restore(start);
  const at::Tensor x = batch.images.to(device_), y = batch.labels.to(device_);
  std::vector<at::Tensor> buffers;
  {
    torch::NoGradGuard no_grad;
    for (const auto& b : buffers_) buffers.push_back(b.tensor.clone());
  }
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  const at::Tensor generator = cpu.get_state();
  model_->train();
  const std::vector<double> ready = gradient_ready_seconds(
      params_,
      [&] {
        AutocastGuard autocast(device_.type(), amp_dtype_);
        return model_->loss(model_->forward(x), y);
      },
      kUnmeasuredPasses, kMeasuredPasses);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].tensor.copy_(buffers[i]);
  }
  cpu.set_state(generator);
  return ready;
}

void Trainer::use_fusion_groups(const std::vector<int64_t>& groups) {
  buckets_ = buckets_of_groups(params_, groups);
  fusion_groups_ = groups;
}

void Trainer::save_fusion(TensorMap& state) const {
  if (!fusion_groups_.empty()) state[kFusionKey] = torch::tensor(fusion_groups_, torch::kLong);
}

bool Trainer::restore_fusion(const TensorMap& state) {
  if (parse_fusion_mode(cfg_.train.fusion) == FusionMode::size) return false;
  const auto it = state.find(kFusionKey);
  if (it == state.end())
    throw std::runtime_error("checkpoint: no '" + std::string(kFusionKey) +
                             "' entry, which train.fusion: " + cfg_.train.fusion +
                             " resumes its buckets from");
  const at::Tensor g = it->second.to(torch::kLong).contiguous();
  try {
    use_fusion_groups(
        std::vector<int64_t>(g.data_ptr<int64_t>(), g.data_ptr<int64_t>() + g.numel()));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("checkpoint: '") + kFusionKey + "': " + e.what());
  }
  if (comm_.rank() == 0)
    report_fusion(cfg_, buckets_, nullptr, {}, {}, resume_step_, store_, run_id_, quiet_);
  return true;
}

}  // namespace cedar
