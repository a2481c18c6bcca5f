// The x86 features the run-time kernel choice reads from CPUID directly, because not every
// compiler's __builtin_cpu_supports knows their names (clang 14 rejects "vaes" and "f16c").
// The callers also ask __builtin_cpu_supports("avx") or ("avx2"), which includes the operating
// system's support for the 256-bit registers.
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

namespace cedar {

// F16C: CPUID leaf 1, ECX bit 29.
inline bool cpuid_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}

// VAES: CPUID leaf 7, sub-leaf 0, ECX bit 9.
inline bool cpuid_has_vaes() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 9)) != 0;
}

}  // namespace cedar
#endif
