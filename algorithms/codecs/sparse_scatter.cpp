#include "algorithms/codecs/sparse_scatter.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/simd.h"

namespace cedar {

template <class Index>
void scatter_into_zeros(const uint8_t* index, const uint8_t* value, int64_t k, float* out,
                        int64_t numel, const char* who) {
  int64_t j = 0, last = -1;  // the next entry; the index of the one before
  auto index_at = [&](int64_t q) {
    Index i;
    std::memcpy(&i, index + q * static_cast<int64_t>(sizeof(Index)), sizeof(Index));
    return static_cast<int64_t>(i);
  };
  auto value_at = [&](int64_t q) {
    float v;
    std::memcpy(&v, value + 4 * q, sizeof v);
    return v;
  };
  auto bad = [&] {
    return std::invalid_argument(std::string(who) + ": " + std::to_string(k) +
                                 " indices are not strictly ascending within [0, " +
                                 std::to_string(numel) + ")");
  };
  // Writes the entries with index < end into out (after zeros).
  auto place = [&](int64_t end) {
    for (; j < k; ++j) {
      const int64_t i = index_at(j);
      if (i >= end) break;
      if (i <= last) throw bad();
      out[i] = value_at(j);
      last = i;
    }
  };
  const auto address = reinterpret_cast<uintptr_t>(out);
  int64_t done = 0;  // out[0, done) is written
#if defined(__SSE2__)
  if (stream_output(numel) && address % 4 == 0) {
    // Plain stores up to the first 64-byte boundary, then whole lines of 16 values.
    const int64_t head = static_cast<int64_t>((64 - address % 64) % 64) / 4;
    const int64_t lines_end = head + (numel - head) / 16 * 16;
    std::memset(out, 0, static_cast<size_t>(head) * sizeof(float));
    place(head);
    const __m128 zero = _mm_setzero_ps();
    const __m128i lane[4] = {_mm_setr_epi32(0, 1, 2, 3), _mm_setr_epi32(4, 5, 6, 7),
                             _mm_setr_epi32(8, 9, 10, 11), _mm_setr_epi32(12, 13, 14, 15)};
    int64_t b = head;  // the next line; the entries left have indices >= b
    for (int64_t next; j < k && (next = index_at(j)) < lines_end;) {
      // The line of the next entry (next >= b, see above); zeros up to it.
      for (const int64_t hit = b + ((next - b) & ~int64_t{15}); b < hit; b += 16)
        for (int q = 0; q < 4; ++q) _mm_stream_ps(out + b + 4 * q, zero);
      // The line's entries go into the lane that equals their offset (strictly ascending
      // indices: one entry per lane at most).
      __m128 line[4] = {zero, zero, zero, zero};
      for (; j < k; ++j) {
        const int64_t i = index_at(j);
        if (i >= b + 16) break;
        if (i <= last) throw bad();
        const __m128i at = _mm_set1_epi32(static_cast<int32_t>(i - b));
        const __m128 v = _mm_set1_ps(value_at(j));
        for (int q = 0; q < 4; ++q)
          line[q] =
              _mm_or_ps(line[q], _mm_and_ps(v, _mm_castsi128_ps(_mm_cmpeq_epi32(at, lane[q]))));
        last = i;
      }
      for (int q = 0; q < 4; ++q) _mm_stream_ps(out + b + 4 * q, line[q]);
      b += 16;
    }
    for (; b < lines_end; b += 16)
      for (int q = 0; q < 4; ++q) _mm_stream_ps(out + b + 4 * q, zero);
    store_fence();
    done = lines_end;
  }
#endif
  // An empty tensor may have no storage: memset is not to be given a null pointer, even for 0.
  if (numel > done) std::memset(out + done, 0, static_cast<size_t>(numel - done) * sizeof(float));
  place(numel);
  if (j < k) throw bad();  // an index at or past numel
}

template <class Index>
void subtract_at(const uint8_t* index, const uint8_t* value, int64_t k, float* x, int64_t numel,
                 const char* who) {
  int64_t last = -1;
  for (int64_t j = 0; j < k; ++j) {
    Index i;
    std::memcpy(&i, index + j * static_cast<int64_t>(sizeof(Index)), sizeof(Index));
    float v;
    std::memcpy(&v, value + 4 * j, sizeof v);
    if (static_cast<int64_t>(i) <= last || static_cast<int64_t>(i) >= numel)
      throw std::invalid_argument(std::string(who) + ": " + std::to_string(k) +
                                  " indices are not strictly ascending within [0, " +
                                  std::to_string(numel) + ")");
    last = static_cast<int64_t>(i);
    x[last] -= v;
  }
}

template void subtract_at<int32_t>(const uint8_t*, const uint8_t*, int64_t, float*, int64_t,
                                   const char*);
template void subtract_at<int64_t>(const uint8_t*, const uint8_t*, int64_t, float*, int64_t,
                                   const char*);

template void scatter_into_zeros<int32_t>(const uint8_t*, const uint8_t*, int64_t, float*, int64_t,
                                          const char*);
template void scatter_into_zeros<int64_t>(const uint8_t*, const uint8_t*, int64_t, float*, int64_t,
                                          const char*);

}  // namespace cedar
