#pragma once
// Mixed-precision training on in-process ranks: a linear classifier of synthetic 8x8 images that
// records the dtype of every forward pass's output and can poison its gradient (inf) at chosen
// training forward passes, and a Trainer run of it with train.amp set.
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "comm/run_network_profiles.h"
#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/store.h"
#include "runner/train/trainer.h"

namespace cedar::testing {

class ProbeModel : public Model {
 public:
  ProbeModel(int64_t inputs, int64_t classes) {
    fc_ = register_module("fc", torch::nn::Linear(inputs, classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    auto out = fc_->forward(x.flatten(1));
    if (!is_training()) {
      eval_dtypes.insert(out.scalar_type());
      return out;
    }
    train_dtypes.insert(out.scalar_type());
    // The gradient that reaches the logits becomes inf: every parameter's gradient overflows.
    if (poison_all || poison_at.count(train_calls))
      out.register_hook([](torch::Tensor g) { return g + std::numeric_limits<float>::infinity(); });
    ++train_calls;
    return out;
  }
  std::set<at::ScalarType> train_dtypes, eval_dtypes;
  std::set<int64_t> poison_at;  // training forward passes (0-based) whose gradient overflows
  bool poison_all = false;
  int64_t train_calls = 0;

 private:
  torch::nn::Linear fc_{nullptr};
};

struct AmpRun {
  ExperimentConfig cfg;
  LoadedDataset data;
  std::shared_ptr<ProbeModel> model;
};

// Batch 16 of a 10-class synthetic set, plain SGD, `steps` steps; the model seeded with `seed`.
inline AmpRun amp_run(const std::string& amp, int64_t steps, uint64_t seed = 7) {
  torch::set_num_threads(1);
  AmpRun r;
  r.cfg.data.name = "synthetic";
  r.cfg.data.augment = false;
  r.cfg.data.prefetch = 0;
  r.cfg.train.batch_size = 16;
  r.cfg.train.max_steps = steps;
  r.cfg.train.amp = amp;
  r.cfg.optimizer.schedule = "constant";
  r.cfg.optimizer.lr = 0.05;
  r.cfg.optimizer.weight_decay = 0;
  r.cfg.algorithm = "dense";
  DatasetSpec ds;
  ds.name = "synthetic";
  ds.image_size = 8;
  ds.augment = false;
  ds.synthetic_train = 1024;
  ds.synthetic_test = 256;
  r.data = load_dataset(ds);
  torch::manual_seed(seed);
  r.model = std::make_shared<ProbeModel>(r.data.train.channels * 64, r.data.train.num_classes);
  return r;
}

// Trains `r` on rank `inner.rank()` through the whole Trainer, on `device` (the model is moved
// there first): `inner` carries the algorithm's traffic on that device, `control` (default:
// `inner`) the harness's on the CPU.
inline RunSummary train_amp(AmpRun& r, Communicator& inner, ResultStore* store = nullptr,
                            int64_t run_id = -1, const CheckpointDir* checkpoints = nullptr,
                            int64_t resume_step = -1,
                            torch::Device device = torch::Device(torch::kCPU),
                            Communicator* control = nullptr) {
  r.model->to(device);
  MeteredCommunicator comm(inner);
  Trainer trainer(r.cfg, run_network_profiles(r.cfg), r.model, r.data,
                  find_algorithm("dense").make(YAML::Node(), Source{}, nullptr), comm,
                  control ? *control : inner, store, run_id, device, true);
  trainer.set_checkpoints(checkpoints, resume_step);
  return trainer.run();
}

}  // namespace cedar::testing
