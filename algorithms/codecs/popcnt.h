#pragma once
// Bit counts (__builtin_popcount) as the POPCNT instruction on the CPUs that have it, without
// building the project for them. Compiled for the baseline x86-64, GCC turns the builtin into a
// call to libgcc's __popcountdi2, which took 14-17% of the top-k and random-k codecs' time.
// A hot loop is written once as a CEDAR_ALWAYS_INLINE function and inlined into two callers, one
// marked CEDAR_POPCNT_TARGET: the builtin, expanded in the caller's context, is one instruction
// there. cpu_has_popcnt() chooses between them at run time. The counts are exact either way.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_POPCNT_TARGET __attribute__((target("popcnt")))
#define CEDAR_ALWAYS_INLINE inline __attribute__((always_inline))
namespace cedar {
// Asked once per process.
inline bool cpu_has_popcnt() {
  static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("popcnt"));
  return yes;
}
}  // namespace cedar
#else
#define CEDAR_POPCNT_TARGET
#define CEDAR_ALWAYS_INLINE inline
namespace cedar {
inline bool cpu_has_popcnt() { return false; }
}  // namespace cedar
#endif
