// ShardedLoader: the planner (datasets/batch_plan.h) decides each batch's images and draws in
// order; the filler (datasets/batch_fill.h) makes its tensors, on the caller's thread or on the
// prefetcher's (datasets/prefetcher.h). The loader keeps the position of what it handed over.
#include "datasets/loader.h"

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "datasets/prefetcher.h"

namespace cedar {

ShardedLoader::ShardedLoader(const ImageSet& data, Normalization norm, Augmentation aug,
                             int64_t batch_size, int rank, int world_size, uint64_t seed,
                             bool shuffle, bool drop_last, PrefetchOptions prefetch)
    : filler_(data, norm, aug.pad_crop, prefetch.pin_memory),
      planner_({data.count, batch_size, rank, world_size, seed, shuffle, drop_last}, aug),
      rng_(planner_.epoch_rng(0)) {
  if (prefetch.depth < 0 || prefetch.workers < 1)
    throw std::invalid_argument(
        "ShardedLoader: prefetch depth must be >= 0 and workers >= 1, got " +
        std::to_string(prefetch.depth) + " and " + std::to_string(prefetch.workers));
  if (prefetch.depth > 0)
    prefetch_ = std::make_unique<Prefetcher>(planner_, filler_, prefetch.depth, prefetch.workers);
}

ShardedLoader::~ShardedLoader() = default;

int64_t ShardedLoader::samples_per_rank() const { return planner_.samples_per_rank(); }

int64_t ShardedLoader::batches_per_epoch() const { return planner_.batches_per_epoch(); }

void ShardedLoader::reposition(int64_t epoch, int64_t cursor, const std::mt19937_64& rng) {
  if (prefetch_)
    prefetch_->reset([&](BatchPlanner& p) { p.seek(epoch, cursor, rng); });
  else
    planner_.seek(epoch, cursor, rng);
  epoch_ = epoch;
  cursor_ = cursor;
  rng_ = rng;
  epoch_over_ = false;
  in_step_ = true;
}

void ShardedLoader::start_epoch(int64_t epoch) {
  const std::mt19937_64 fresh = planner_.epoch_rng(epoch);
  // The planner may already be there: right after the previous epoch's end, or when nothing of
  // this epoch was handed over yet. Batches prepared meanwhile are kept.
  const bool there = in_step_ && (epoch_over_ ? epoch == epoch_ + 1
                                              : epoch == epoch_ && cursor_ == 0 && rng_ == fresh);
  if (!there) return reposition(epoch, 0, fresh);
  epoch_ = epoch;
  cursor_ = 0;
  rng_ = fresh;
  epoch_over_ = false;
}

LoaderPosition ShardedLoader::position() const {
  std::ostringstream rng;
  rng << rng_;
  return {epoch_, cursor_, rng.str()};
}

void ShardedLoader::restore(const LoaderPosition& pos) {
  if (pos.epoch < 0 || pos.cursor < 0 || pos.cursor > samples_per_rank())
    throw std::invalid_argument("ShardedLoader: position (epoch " + std::to_string(pos.epoch) +
                                ", sample " + std::to_string(pos.cursor) + ") is outside the data");
  // The start of an epoch may leave the generator out: it is the epoch's fresh one.
  std::mt19937_64 rng = planner_.epoch_rng(pos.epoch);
  if (!pos.rng_state.empty()) {
    std::istringstream in(pos.rng_state);
    in >> rng;
    if (in.fail()) throw std::invalid_argument("ShardedLoader: unreadable generator state");
  }
  reposition(pos.epoch, pos.cursor, rng);
}

bool ShardedLoader::next(Batch& out) {
  if (epoch_over_) return false;
  in_step_ = false;  // until this batch is handed over: an error leaves the planner past it
  BatchPlan plan;
  if (prefetch_) {
    Prefetcher::Item item = prefetch_->take();
    if (item.error) std::rethrow_exception(item.error);
    plan = std::move(item.plan);
    if (!plan.end_of_epoch()) {  // the caller's batch stays as it is at the end of the epoch
      if (!filler_.pinned() && BatchFiller::unshared(out)) prefetch_->recycle(std::move(out));
      out = std::move(item.batch);
    }
  } else {
    plan = planner_.next();
    if (!plan.end_of_epoch()) filler_.fill(plan, out, scratch_);
  }
  in_step_ = true;
  if (plan.end_of_epoch()) {
    epoch_over_ = true;
    return false;
  }
  cursor_ = plan.cursor_after;
  rng_ = plan.rng_after;
  return true;
}

}  // namespace cedar
