#pragma once
// The timings behind `cedar network calibrate`: each collective Cedar uses — allreduce,
// allgather, allgatherv, broadcast and point-to-point sendrecv — timed as raw MPI calls (what
// comm/mpi_communicator.cpp makes: allgatherv is an allgather of the counts, then
// MPI_Allgatherv; sendrecv a ring, every rank sending to the next) over a sweep of sizes on the
// first P ranks of MPI_COMM_WORLD, for each P asked.
//
// Per size: `warmup` untimed calls, then one checked call whose result is compared with what it
// must be (outside any timed region: a wrong result throws), then `reps` timed loops. A loop is
// `iters` calls back to back after a barrier; each rank's time per call is averaged over the
// ranks (as nccl-tests reports), and the median over the loops is kept. `iters` comes from a
// probe call (the slowest rank's time, so that every rank makes as many calls) so that a loop
// lasts about `loop_seconds` (1 to 1000 calls). With `idle_seconds` > 0 every timed call is
// instead timed alone, after every rank has left the link quiet that long (as a training step's
// forward and backward leave it between its exchanges): what a collective costs on a link that
// went cold, against what it costs back to back. Buffers hold small integers as fp32, so every
// sum is exact. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/calibrated_profile.h"

namespace cedar {

struct CalibrationOptions {
  std::vector<int64_t> sizes;    // bytes: S, or s per rank for allgather[v]; multiples of 4
  std::vector<int> world_sizes;  // P values (each 2..world); empty: 2, 4, 8, ... and the world
  int warmup = 3;
  int reps = 5;
  double loop_seconds = 0.02;
  double idle_seconds = 0;  // > 0: each timed call alone, after this long with the link quiet
  // Each timed loop makes at least this many calls back to back (a large message on a slow link
  // otherwise makes one call per loop): the regime of a training step's consecutive exchanges.
  int min_calls = 1;
  // The collectives timed, among those of calibration_ops(); allreduce is required (it sets the
  // profile's default α and β). Empty: every one.
  std::vector<std::string> ops;
  // A P below the world is timed on every group of P consecutive ranks at once (each in its own
  // communicator; the world a multiple of P), rank 0's group's timings kept, not on the first P
  // ranks with the others waiting: with a host's ranks consecutive (the hostfile filled a host's
  // slots first), each host's level of a hierarchical exchange runs so, all hosts at once.
  bool every_group = false;
};

// allreduce, allgather, allgatherv, broadcast, sendrecv.
const std::vector<std::string>& calibration_ops();

// The P values `options` asks for on `world` ranks, ascending, without repeats. Throws
// std::invalid_argument for a P outside 2..world, or with every_group one that does not divide
// world.
std::vector<int> calibration_world_sizes(const CalibrationOptions& options, int world);
// The group (MPI_Comm_split color) of `rank` when timing P = `p`: 0 for the first P ranks, -1
// (none) for the others; with every_group, rank / p.
int calibration_group(const CalibrationOptions& options, int rank, int p);

// Throws std::invalid_argument naming the command-line option at fault ("--ops: ...") when
// `options` cannot be timed: fewer than two sizes, a size not a positive multiple of 4 up to
// 1 GiB, reps < 1, warmup < 0, idle outside 0..600 s, min_calls outside 1..1000, idle with
// min_calls > 1, an unknown op, or ops without allreduce.
void check_calibration_options(const CalibrationOptions& options);

// Every rank of MPI_COMM_WORLD calls it (MPI initialised), after check_calibration_options. Rank 0
// receives every timing; the other ranks those of the P values they took part in. Throws
// std::runtime_error naming the collective, P and size when a checked call's result is wrong.
std::vector<CollectiveTiming> time_collectives(const CalibrationOptions& options);

}  // namespace cedar
