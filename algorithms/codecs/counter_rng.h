#pragma once
// Counter-based uniforms for the stochastic quantizers (QSGD, TernGrad): u(key, i) in [0, 1) is a
// pure function of a 64-bit key and the element index i, so an encoder draws the uniforms of any
// range of elements, chunk by chunk, without a sequential generator state.
//
// Definition (ARS style, Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2,
// 3", SC 2011): the 128-bit block j = i / 4 (j in the low 64 bits, 0 above, little-endian) is
// whitened with round key k_0 and passed through four AES rounds (the AESENC step: ShiftRows,
// SubBytes, MixColumns, xor of round key k_r), k_r = (K_lo + r·W_lo, K_hi + r·W_hi) a Weyl
// sequence from the 128-bit K = (splitmix64(key), splitmix64(key ^ W_hi)). Word i mod 4 of the
// result (32 bits, little-endian) gives u = (word >> 8)·2^-24: 24 bits, every value a multiple of
// 2^-24 in [0, 1), as at::rand's fp32 uniforms. The words themselves, w(key, i), are the random
// integers of random-k's index sampler (random_subset.h).
//
// Two paths give the same bits: AES-NI where the CPU has it (chosen at run time, as the build
// assumes only SSE2) and a portable software round (an S-box computed once) elsewhere. Four
// rounds after the whitening diffuse every bit of the counter and key into every output bit
// (two AES rounds already give full diffusion); tests/algorithms/counter_rng_test.cpp checks the
// uniformity and independence that stochastic rounding relies on.
#include <cstdint>

namespace cedar {

class CounterUniforms {
 public:
  explicit CounterUniforms(uint64_t key);

  // out[k] = u(key, first + k) for k in [0, n).
  void fill(uint64_t first, int64_t n, float* out) const;
  // The same values by the portable path only (tests compare the two paths).
  void fill_portable(uint64_t first, int64_t n, float* out) const;
  // out[k] = w(key, first + k), the 32-bit word that u(key, first + k) is made of; and the same
  // by the portable path only.
  void words(uint64_t first, int64_t n, uint32_t* out) const;
  void words_portable(uint64_t first, int64_t n, uint32_t* out) const;

  // Whether fill() uses the CPU's AES instructions.
  static bool hardware_aes();

  // The round keys k_0 .. k_kRounds, 16 bytes each: the AVX2 kernels (avx2_kernels.h) run the
  // rounds in registers beside the code that consumes the uniforms.
  const uint8_t* round_keys() const { return &round_key_[0][0]; }

  static constexpr int kRounds = 4;

  // The AES S-box of the rounds (256 entries): the device-generic form (generic_codecs.h) looks
  // its bytes up in a tensor of it.
  static const uint8_t* sbox_table();

 private:
  // Round keys k_0 .. k_kRounds as 16 little-endian bytes each.
  alignas(16) uint8_t round_key_[kRounds + 1][16];
};

}  // namespace cedar
