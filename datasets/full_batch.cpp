#include "datasets/full_batch.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace cedar {

FullBatchLoader::FullBatchLoader(std::shared_ptr<const RegressionSet> set, int rank, int world_size)
    : set_(std::move(set)) {
  if (!set_) throw std::invalid_argument("train.full_batch: the data set has no shards");
  if (set_->shards != world_size)
    throw std::invalid_argument(
        "train.full_batch: each rank trains on one shard, but data.shards is " +
        std::to_string(set_->shards) + " and there are " + std::to_string(world_size) +
        " ranks; set data.shards to the number of ranks");
  shard_.images = set_->shard_features(rank).contiguous();
  shard_.labels = set_->shard_targets(rank).contiguous();
}

void FullBatchLoader::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  served_ = false;
}

bool FullBatchLoader::next(Batch& out) {
  if (served_) return false;
  out = shard_;
  served_ = true;
  return true;
}

LoaderPosition FullBatchLoader::position() const {
  return {epoch_, served_ ? shard_.images.size(0) : 0, ""};
}

void FullBatchLoader::restore(const LoaderPosition& pos) {
  if (pos.epoch < 0 || (pos.cursor != 0 && pos.cursor != shard_.images.size(0)))
    throw std::invalid_argument("FullBatchLoader: position (epoch " + std::to_string(pos.epoch) +
                                ", sample " + std::to_string(pos.cursor) +
                                ") is not the start or the end of the shard");
  epoch_ = pos.epoch;
  served_ = pos.cursor != 0;
}

}  // namespace cedar
