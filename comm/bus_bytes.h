#pragma once
// Bytes a rank pushes through its link for one collective under a bandwidth-optimal (ring)
// algorithm: the nccl-tests bus-bandwidth factors applied to the operation's size.
//   allreduce of S bytes:              2(n-1)/n * S
//   allgather with T bytes gathered:   (n-1)/n * T        (T = sum of every rank's contribution)
//   broadcast of S bytes:              S
// Results are rounded to the nearest byte. No LibTorch here.
#include <cstdint>

namespace cedar {

inline int64_t rounded_ratio(int64_t num, int64_t den) { return (num + den / 2) / den; }

inline int64_t allreduce_bus_bytes(int64_t bytes, int world) {
  return world <= 1 ? 0 : rounded_ratio(2 * (world - 1) * bytes, world);
}
inline int64_t allgather_bus_bytes(int64_t total_bytes, int world) {
  return world <= 1 ? 0 : rounded_ratio((world - 1) * total_bytes, world);
}
inline int64_t broadcast_bus_bytes(int64_t bytes, int world) { return world <= 1 ? 0 : bytes; }

// nccl-tests bandwidth definitions, GB/s = 1e9 bytes/s.
inline double algbw_gbps(int64_t bytes, double seconds) { return bytes / seconds / 1e9; }
inline double allreduce_busbw_factor(int world) { return 2.0 * (world - 1) / world; }
inline double allgather_busbw_factor(int world) { return double(world - 1) / world; }

}  // namespace cedar
