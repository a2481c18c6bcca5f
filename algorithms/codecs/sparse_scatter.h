#pragma once
// The decoders' inner loop of the sparse (index, value) encoding (sparse_exchange.h): a dense
// vector of zeros with the encoded values at their indices, written in one pass.
#include <cstdint>

namespace cedar {

// Writes zeros with value[j] at index[j] (j < k) into out[0, numel), in ascending order of the
// output, checking on the way that the indices (a peer's, possibly) are strictly ascending within
// [0, numel). index holds k Index values and value k fp32 values, in native byte order and read
// bytewise (a payload cut from a larger buffer need not be aligned). Outputs above
// kStreamingBytes (codecs/simd.h) are written in whole 64-byte lines of non-temporal stores, the
// lines that hold entries built in registers, so that no line is read or written twice. A bad
// index throws std::invalid_argument naming `who`, with `out` partly written.
template <class Index>
void scatter_into_zeros(const uint8_t* index, const uint8_t* value, int64_t k, float* out,
                        int64_t numel, const char* who);

// x[index[j]] -= value[j] (j < k) in place, leaving the rest of x[0, numel) untouched: x minus the
// dense decoding, bit for bit (x - 0 is x). The indices are checked as above; a bad one throws
// std::invalid_argument naming `who`, with x partly updated.
template <class Index>
void subtract_at(const uint8_t* index, const uint8_t* value, int64_t k, float* x, int64_t numel,
                 const char* who);

extern template void scatter_into_zeros<int32_t>(const uint8_t*, const uint8_t*, int64_t, float*,
                                                 int64_t, const char*);
extern template void scatter_into_zeros<int64_t>(const uint8_t*, const uint8_t*, int64_t, float*,
                                                 int64_t, const char*);
extern template void subtract_at<int32_t>(const uint8_t*, const uint8_t*, int64_t, float*, int64_t,
                                          const char*);
extern template void subtract_at<int64_t>(const uint8_t*, const uint8_t*, int64_t, float*, int64_t,
                                          const char*);

}  // namespace cedar
