#pragma once
// What the MPI training tests train: a CIFAR ResNet-20 on synthetic 8x8 images, batch 8 per rank,
// one thread per rank (several ranks share the machine's cores); and every rank's parameters
// gathered for comparison.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/metered_communicator.h"
#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "models/model.h"

namespace cedar::testing {

struct SyntheticTraining {
  ExperimentConfig cfg;  // cfg.algorithm is left for the test to name
  LoadedDataset data;
  std::shared_ptr<Model> model;
};

// `steps` steps over `train_images` training and `test_images` test images; torch is seeded with
// `model_seed` right before the model is built (a rank-dependent seed gives each rank different
// initial weights).
inline SyntheticTraining synthetic_resnet20(int64_t steps, int64_t train_images,
                                            int64_t test_images, uint64_t model_seed) {
  torch::set_num_threads(1);
  SyntheticTraining t;
  t.cfg.model.name = "resnet20";
  t.cfg.data.name = "synthetic";
  t.cfg.train.batch_size = 8;
  t.cfg.train.max_steps = steps;
  DatasetSpec ds;
  ds.name = "synthetic";
  ds.image_size = 8;
  ds.synthetic_train = train_images;
  ds.synthetic_test = test_images;
  t.data = load_dataset(ds);
  torch::manual_seed(model_seed);
  ModelSpec ms;
  ms.name = "resnet20";
  ms.in_channels = t.data.train.channels;
  ms.num_classes = t.data.train.num_classes;
  ms.image_size = 8;
  t.model = make_model(ms);
  return t;
}

// The model's parameters as one flat vector.
inline torch::Tensor flat_parameters(Model& model) {
  std::vector<torch::Tensor> flat;
  for (auto& p : model.parameters()) flat.push_back(p.detach().reshape({-1}));
  return torch::cat(flat);
}

// Every rank's copy of `t`, one row per rank, gathered over the unmetered backend.
inline torch::Tensor gather_all(MeteredCommunicator& comm, const torch::Tensor& t) {
  return comm.inner().allgather(t.reshape({-1})).view({comm.size(), -1});
}

}  // namespace cedar::testing
