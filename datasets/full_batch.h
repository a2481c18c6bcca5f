#pragma once
// Full-batch training (train.full_batch): every step of worker r is one batch holding its whole
// shard r of a regression set (datasets/regression.h), so the workers compute full gradients of
// their local objectives, as in LAG's experiments (Chen et al., NeurIPS 2018). An epoch is one
// step.
#include <cstdint>
#include <memory>

#include "datasets/loader.h"
#include "datasets/regression.h"

namespace cedar {

class FullBatchLoader final : public BatchSource {
 public:
  // Worker `rank` of `world_size`; the set must have exactly world_size shards (throws
  // std::invalid_argument otherwise).
  FullBatchLoader(std::shared_ptr<const RegressionSet> set, int rank, int world_size);

  void start_epoch(int64_t epoch) override;
  int64_t batches_per_epoch() const override { return 1; }
  // The whole shard (images: features [n, d]; labels: targets [n]), once per epoch.
  bool next(Batch& out) override;
  // cursor: the shard's samples once served, else 0.
  LoaderPosition position() const override;
  void restore(const LoaderPosition& pos) override;

 private:
  std::shared_ptr<const RegressionSet> set_;
  Batch shard_;
  int64_t epoch_ = 0;
  bool served_ = false;
};

}  // namespace cedar
