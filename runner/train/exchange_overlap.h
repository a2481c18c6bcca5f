#pragma once
// How much of a step's exchange ran while its backward pass did. One exchange thread runs a
// step's exchanges (buckets or slices) one after another, so their intervals do not overlap each
// other: the exchange time is the sum of their durations, the hidden time the sum of their parts
// inside backward's interval. Units are the caller's (seconds in step_stats, microseconds in a
// timeline). `train.overlap` records both per step (step_stats 'overlap_exchange_seconds' and
// 'overlap_hidden_seconds', runner/train/trainer_step.cpp); `cedar trace summary` computes them
// from a timeline (runner/train/timeline_summary.h). No LibTorch here.

namespace cedar {

struct ExchangeOverlap {
  double exchange = 0;  // the exchanges' durations, summed
  double hidden = 0;    // their parts inside backward, summed

  // One exchange [start, end] of a step whose backward ran over [backward_start, backward_end].
  void add(double start, double end, double backward_start, double backward_end);
  // hidden / exchange; 0 when nothing was exchanged.
  double hidden_share() const { return exchange > 0 ? hidden / exchange : 0; }
};

}  // namespace cedar
