#include "algorithms/codecs/counter_rng.h"

#include <algorithm>
#include <array>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_AESNI 1
#include <emmintrin.h>
#include <wmmintrin.h>
#endif

namespace cedar {
namespace {

// Weyl increments of the round keys: the golden ratio and sqrt(3) - 1 in 64-bit fixed point.
constexpr uint64_t kWeylLo = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kWeylHi = 0xbb67ae8584caa73bULL;

uint64_t splitmix64(uint64_t z) {
  z += kWeylLo;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Multiplication by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
uint8_t xtime(uint8_t a) { return static_cast<uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1b : 0)); }

uint8_t gf_mul(uint8_t a, uint8_t b) {
  uint8_t p = 0;
  for (; b; b >>= 1, a = xtime(a))
    if (b & 1) p ^= a;
  return p;
}

// The AES S-box from its definition: the inverse in GF(2^8) (0 for 0), then the affine map
// b ^ rotl(b, 1) ^ rotl(b, 2) ^ rotl(b, 3) ^ rotl(b, 4) ^ 0x63.
std::array<uint8_t, 256> make_sbox() {
  std::array<uint8_t, 256> s{};
  for (int v = 0; v < 256; ++v) {
    uint8_t inv = 0;
    for (int w = 1; w < 256 && v; ++w)
      if (gf_mul(static_cast<uint8_t>(v), static_cast<uint8_t>(w)) == 1) {
        inv = static_cast<uint8_t>(w);
        break;
      }
    auto rotl = [](uint8_t b, int k) { return static_cast<uint8_t>((b << k) | (b >> (8 - k))); };
    s[v] = static_cast<uint8_t>(inv ^ rotl(inv, 1) ^ rotl(inv, 2) ^ rotl(inv, 3) ^ rotl(inv, 4) ^
                                0x63);
  }
  return s;
}

const std::array<uint8_t, 256>& sbox() {
  static const std::array<uint8_t, 256> s = make_sbox();
  return s;
}

// One AESENC on 16 bytes (column c = bytes 4c .. 4c + 3, row r = byte 4c + r).
void aes_round(uint8_t st[16], const uint8_t key[16], const std::array<uint8_t, 256>& s) {
  uint8_t t[16];
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) t[4 * c + r] = s[st[4 * ((c + r) & 3) + r]];  // ShiftRows, SubBytes
  for (int c = 0; c < 4; ++c) {                                               // MixColumns
    const uint8_t a0 = t[4 * c], a1 = t[4 * c + 1], a2 = t[4 * c + 2], a3 = t[4 * c + 3];
    const uint8_t x0 = xtime(a0), x1 = xtime(a1), x2 = xtime(a2), x3 = xtime(a3);
    st[4 * c] = static_cast<uint8_t>(x0 ^ x1 ^ a1 ^ a2 ^ a3 ^ key[4 * c]);
    st[4 * c + 1] = static_cast<uint8_t>(a0 ^ x1 ^ x2 ^ a2 ^ a3 ^ key[4 * c + 1]);
    st[4 * c + 2] = static_cast<uint8_t>(a0 ^ a1 ^ x2 ^ x3 ^ a3 ^ key[4 * c + 2]);
    st[4 * c + 3] = static_cast<uint8_t>(x0 ^ a0 ^ a1 ^ a2 ^ x3 ^ key[4 * c + 3]);
  }
}

inline float to_uniform(uint32_t word) {
  return static_cast<float>(static_cast<int32_t>(word >> 8)) * (1.0f / 16777216.0f);
}

// How the four words of a block are stored: as the uniforms (fill) or as the words (words).
struct AsUniforms {
  using T = float;
  static void store(const uint32_t w[4], float* o) {
    for (int q = 0; q < 4; ++q) o[q] = to_uniform(w[q]);
  }
#if defined(CEDAR_AESNI)
  static void store(__m128i v, float* o) {
    _mm_storeu_ps(
        o, _mm_mul_ps(_mm_cvtepi32_ps(_mm_srli_epi32(v, 8)), _mm_set1_ps(1.0f / 16777216.0f)));
  }
#endif
};

struct AsWords {
  using T = uint32_t;
  static void store(const uint32_t w[4], uint32_t* o) { std::memcpy(o, w, 16); }
#if defined(CEDAR_AESNI)
  static void store(__m128i v, uint32_t* o) { _mm_storeu_si128(reinterpret_cast<__m128i*>(o), v); }
#endif
};

// The four words of block j, portable path.
void block_portable(const uint8_t (*rk)[16], uint64_t j, uint32_t out[4]) {
  const auto& s = sbox();
  uint8_t st[16] = {};
  for (int b = 0; b < 8; ++b) st[b] = static_cast<uint8_t>(j >> (8 * b));
  for (int b = 0; b < 16; ++b) st[b] ^= rk[0][b];
  for (int r = 1; r <= CounterUniforms::kRounds; ++r) aes_round(st, rk[r], s);
  for (int w = 0; w < 4; ++w)
    out[w] = static_cast<uint32_t>(st[4 * w]) | static_cast<uint32_t>(st[4 * w + 1]) << 8 |
             static_cast<uint32_t>(st[4 * w + 2]) << 16 |
             static_cast<uint32_t>(st[4 * w + 3]) << 24;
}

template <class Out>
void blocks_portable(const uint8_t (*rk)[16], uint64_t first, int64_t count, typename Out::T* out) {
  uint32_t w[4];
  for (int64_t b = 0; b < count; ++b) {
    block_portable(rk, first + static_cast<uint64_t>(b), w);
    Out::store(w, out + 4 * b);
  }
}

#if defined(CEDAR_AESNI)
// Two blocks per step: their rounds interleave and hide the AESENC latency.
template <class Out>
__attribute__((target("aes,sse2"))) void blocks_aesni(const uint8_t (*rk)[16], uint64_t first,
                                                      int64_t count, typename Out::T* out) {
  __m128i k[CounterUniforms::kRounds + 1];
  for (int r = 0; r <= CounterUniforms::kRounds; ++r)
    k[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rk[r]));
  const __m128i one = _mm_set_epi64x(0, 1), two = _mm_set_epi64x(0, 2);
  __m128i ca = _mm_set_epi64x(0, static_cast<long long>(first));
  __m128i cb = _mm_add_epi64(ca, one);
  int64_t b = 0;
  for (; b + 2 <= count; b += 2) {
    __m128i x = _mm_xor_si128(ca, k[0]), y = _mm_xor_si128(cb, k[0]);
    ca = _mm_add_epi64(ca, two);
    cb = _mm_add_epi64(cb, two);
    for (int r = 1; r <= CounterUniforms::kRounds; ++r) {
      x = _mm_aesenc_si128(x, k[r]);
      y = _mm_aesenc_si128(y, k[r]);
    }
    Out::store(x, out + 4 * b);
    Out::store(y, out + 4 * b + 4);
  }
  if (b < count) {
    __m128i x = _mm_xor_si128(ca, k[0]);
    for (int r = 1; r <= CounterUniforms::kRounds; ++r) x = _mm_aesenc_si128(x, k[r]);
    Out::store(x, out + 4 * b);
  }
}

bool cpu_has_aes() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse2");
}
#endif

// Writes out[k] = value first + k of the stream, k < n, with `blocks` producing whole blocks of
// four.
template <class T>
void fill_with(void (*blocks)(const uint8_t (*)[16], uint64_t, int64_t, T*),
               const uint8_t (*rk)[16], uint64_t first, int64_t n, T* out) {
  if (n <= 0) return;
  T tmp[4];
  uint64_t j = first / 4;
  const int head = static_cast<int>(first % 4);
  if (head) {  // the tail of a partial first block
    blocks(rk, j++, 1, tmp);
    const int64_t take = std::min<int64_t>(n, 4 - head);
    std::memcpy(out, tmp + head, static_cast<size_t>(take) * sizeof(T));
    out += take;
    n -= take;
  }
  const int64_t full = n / 4;
  if (full) blocks(rk, j, full, out);
  j += static_cast<uint64_t>(full);
  if (n % 4) {
    blocks(rk, j, 1, tmp);
    std::memcpy(out + 4 * full, tmp, static_cast<size_t>(n % 4) * sizeof(T));
  }
}

}  // namespace

CounterUniforms::CounterUniforms(uint64_t key) {
  const uint64_t lo = splitmix64(key), hi = splitmix64(key ^ kWeylHi);
  for (int r = 0; r <= kRounds; ++r) {
    const uint64_t kl = lo + static_cast<uint64_t>(r) * kWeylLo;
    const uint64_t kh = hi + static_cast<uint64_t>(r) * kWeylHi;
    for (int b = 0; b < 8; ++b) {
      round_key_[r][b] = static_cast<uint8_t>(kl >> (8 * b));
      round_key_[r][8 + b] = static_cast<uint8_t>(kh >> (8 * b));
    }
  }
}

const uint8_t* CounterUniforms::sbox_table() { return sbox().data(); }

bool CounterUniforms::hardware_aes() {
#if defined(CEDAR_AESNI)
  static const bool has = cpu_has_aes();
  return has;
#else
  return false;
#endif
}

void CounterUniforms::fill(uint64_t first, int64_t n, float* out) const {
#if defined(CEDAR_AESNI)
  if (hardware_aes()) return fill_with(blocks_aesni<AsUniforms>, round_key_, first, n, out);
#endif
  fill_with(blocks_portable<AsUniforms>, round_key_, first, n, out);
}

void CounterUniforms::fill_portable(uint64_t first, int64_t n, float* out) const {
  fill_with(blocks_portable<AsUniforms>, round_key_, first, n, out);
}

void CounterUniforms::words(uint64_t first, int64_t n, uint32_t* out) const {
#if defined(CEDAR_AESNI)
  if (hardware_aes()) return fill_with(blocks_aesni<AsWords>, round_key_, first, n, out);
#endif
  fill_with(blocks_portable<AsWords>, round_key_, first, n, out);
}

void CounterUniforms::words_portable(uint64_t first, int64_t n, uint32_t* out) const {
  fill_with(blocks_portable<AsWords>, round_key_, first, n, out);
}

}  // namespace cedar
