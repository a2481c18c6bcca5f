#pragma once
// The order of the slices' exchanges under train.schedule: priority, agreed among the ranks.
//
// With allreduce every rank must issue the same collectives in the same order, while which slices
// are ready (all of their gradients produced by backward) differs from rank to rank. Protocol, a
// negotiation as Horovod's coordinator does it (a round before every slice, so that a slice that
// becomes ready preempts the lower-priority ones still waiting, between two slices, as in P3's
// priority-based update; a slice once started runs to its end):
//
//   round k: every rank takes its set of ready slices (round 0 once it holds at least one), as
//            a bitmap of one bit per slice in priority order (bit i of byte i/8 for slice i,
//            ceil(n/8) bytes), and allgathers it;
//            every rank ANDs the ranks' bitmaps, so all hold the same set of slices ready
//            everywhere, and exchanges the first of them (highest priority) not yet exchanged.
//            When there is none, each rank waits until its own ready set has grown past the one it
//            sent in round k (or holds every slice) before round k+1; after a slice, round k+1
//            starts at once.
//
// The ready sets only grow within a step, so every round that agrees on no slice is followed by
// growth on each rank still missing gradients: the rounds end once every slice is exchanged, in
// at most (slices + rounds without one) allgathers.
//
// Control bytes: each round's allgather carries ceil(n/8) bytes from every rank, through the
// run's metered communicator (counted under the operation "allgather"), so a run's payload is the
// exchanges' own plus rounds x ceil(n/8) bytes per rank; the rounds are the step stat
// schedule_rounds.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace cedar {

class Communicator;

struct ScheduleRound {
  double taken_us = 0;   // when this rank took its ready set (ReadySnapshot::taken_us)
  double agreed_us = 0;  // when the agreement came back
  int64_t chosen = -1;   // the slice exchanged after it (-1: none ready on every rank)
  int64_t ready_here = 0, ready_everywhere = 0;  // ready slices not yet exchanged
};

// This rank's ready slices: a flag per slice, in priority order, and when they were taken
// (trace_clock_us, read where the flags are read, so that a slice ready before it is in them).
struct ReadySnapshot {
  std::vector<bool> ready;
  double taken_us = 0;
};
// With `grown_past` set, first waits until more than `grown_past` slices are ready or all are;
// nullopt stops the step (the trainer is going away) before the next round.
using ReadySlices = std::function<std::optional<ReadySnapshot>(std::optional<int64_t> grown_past)>;

// Runs one step's rounds over `comm` for `slices` slices, calling exchange(i) for each slice i
// in the agreed order; returns the rounds (empty when stopped before the first). An exception of
// `exchange` ends the rounds and propagates.
std::vector<ScheduleRound> exchange_in_priority_order(int64_t slices, Communicator& comm,
                                                      const ReadySlices& ready,
                                                      const std::function<void(int64_t)>& exchange);

// The bytes one rank contributes to each round: ceil(slices / 8).
inline int64_t round_bytes(int64_t slices) { return (slices + 7) / 8; }

}  // namespace cedar
