#include "runner/train/priority_schedule.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "runner/train/timeline.h"

namespace cedar {
namespace {

int64_t undone(const std::vector<bool>& flags, const std::vector<bool>& done) {
  int64_t n = 0;
  for (size_t i = 0; i < flags.size(); ++i) n += flags[i] && !done[i];
  return n;
}

// The slices ready on every rank: this rank's flags packed into a bitmap, allgathered, ANDed.
std::vector<bool> ready_everywhere(Communicator& comm, const std::vector<bool>& mine) {
  const int64_t n = static_cast<int64_t>(mine.size()), bytes = round_bytes(n);
  at::Tensor bits = at::zeros({bytes}, at::kByte);
  uint8_t* b = bits.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    if (mine[static_cast<size_t>(i)]) b[i / 8] = static_cast<uint8_t>(b[i / 8] | (1u << (i % 8)));
  const at::Tensor all = comm.allgather(bits.to(comm.device())).cpu().contiguous();
  if (all.numel() != bytes * comm.size())
    throw std::logic_error("priority schedule: the ready bitmaps' allgather returned " +
                           std::to_string(all.numel()) + " bytes, expected " +
                           std::to_string(bytes * comm.size()));
  const uint8_t* a = all.data_ptr<uint8_t>();
  std::vector<bool> everywhere(mine.size());
  for (int64_t i = 0; i < n; ++i) {
    bool set = true;
    for (int r = 0; r < comm.size() && set; ++r) set = (a[r * bytes + i / 8] >> (i % 8)) & 1u;
    everywhere[static_cast<size_t>(i)] = set;
  }
  return everywhere;
}

}  // namespace

std::vector<ScheduleRound> exchange_in_priority_order(
    int64_t slices, Communicator& comm, const ReadySlices& ready,
    const std::function<void(int64_t)>& exchange) {
  std::vector<ScheduleRound> rounds;
  std::vector<bool> done(static_cast<size_t>(slices), false);
  int64_t exchanged = 0;
  // Round 0 waits for a first ready slice; later rounds only after one that agreed on none.
  std::optional<int64_t> wait_past = 0;
  while (exchanged < slices) {
    const std::optional<ReadySnapshot> snapshot = ready(wait_past);
    if (!snapshot) break;
    const std::vector<bool>* mine = &snapshot->ready;
    if (static_cast<int64_t>(mine->size()) != slices)
      throw std::logic_error("priority schedule: " + std::to_string(mine->size()) +
                             " ready flags for " + std::to_string(slices) + " slices");
    ScheduleRound round;
    round.taken_us = snapshot->taken_us;
    const std::vector<bool> everywhere = ready_everywhere(comm, *mine);
    round.agreed_us = trace_clock_us();
    round.ready_here = undone(*mine, done);
    round.ready_everywhere = undone(everywhere, done);
    for (int64_t i = 0; i < slices && round.chosen < 0; ++i)
      if (everywhere[static_cast<size_t>(i)] && !done[static_cast<size_t>(i)]) round.chosen = i;
    rounds.push_back(round);
    if (round.chosen < 0) {
      int64_t ready_count = 0;
      for (bool f : *mine) ready_count += f;
      wait_past = ready_count;
      continue;
    }
    wait_past.reset();
    exchange(round.chosen);
    done[static_cast<size_t>(round.chosen)] = true;
    ++exchanged;
  }
  return rounds;
}

}  // namespace cedar
