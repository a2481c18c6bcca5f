#pragma once
// LAG's upload threshold (Chen, Giannakis, Sun, Yin, NeurIPS 2018, in the form algorithms/lag.cpp
// derives for the average the optimizer applies):
//   (ξ/D) · Σ_{d=1..D} ‖θ^{k+1−d} − θ^{k−d}‖² / η_{k−d}²
// over the D newest parameter moves, each divided by the square of the rate it was made with (a
// move at a non-positive rate counts 0; fewer than D moves: the missing ones count 0). One rule for
// the all-reduce LAG-WK (algorithms/lag.cpp) and the parameter server's workers
// (runner/ps/lag_rule.h). No LibTorch.
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace cedar {

class LagThreshold {
 public:
  LagThreshold(double xi, int64_t history) : xi_(xi), history_(history) {}

  // The parameters moved by ‖Δθ‖² = `squared_move` at learning rate `lr`; the oldest of more
  // than D moves is dropped.
  void moved(double squared_move, double lr) {
    moves_.push_front(lr > 0 ? squared_move / (lr * lr) : 0.0);
    if (static_cast<int64_t>(moves_.size()) > history_) moves_.pop_back();
  }

  double value() const {
    double sum = 0;
    for (double m : moves_) sum += m;
    return xi_ / double(history_) * sum;
  }

  // The moves in units of their rates, newest first (what a checkpoint keeps), and back.
  std::vector<double> moves() const { return {moves_.begin(), moves_.end()}; }
  void set_moves(const std::vector<double>& moves) {
    if (static_cast<int64_t>(moves.size()) > history_)
      throw std::runtime_error("LAG: a checkpoint holds " + std::to_string(moves.size()) +
                               " parameter moves for a history of " + std::to_string(history_));
    moves_.assign(moves.begin(), moves.end());
  }

 private:
  double xi_;
  int64_t history_;
  std::deque<double> moves_;  // ‖θ^{k+1−d} − θ^{k−d}‖² / η_{k−d}², d = 1 first
};

}  // namespace cedar
