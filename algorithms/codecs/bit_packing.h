#pragma once
// Packing of b-bit unsigned codes (b = 1..16) into bytes, shared by the quantizers (QSGD, TernGrad,
// signSGD, EF-signSGD).
//
// Bit order (little-endian, LSB first): code i occupies stream bits [i*b, (i+1)*b), its least
// significant bit first; stream bit k is bit (k mod 8) of byte k/8, where bit 0 is the byte's least
// significant bit. Example, b = 2, codes {1, 2, 3}: byte 0 = 1 | 2<<2 | 3<<4 = 0b00111001.
// Unused high bits of the last byte are zero. Size: exactly packed_bytes(n, b) = ceil(n*b/8).
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cedar {

constexpr int kMaxPackedBits = 16;

inline int64_t packed_bytes(int64_t n, int bits) { return (n * bits + 7) / 8; }

// Streams codes into `out` (which must hold packed_bytes(n, bits) bytes). Inline for the encoders'
// tight loops.
class BitWriter {
 public:
  BitWriter(uint8_t* out, int bits) : out_(out), bits_(bits) {}
  // `code` must be < 2^bits.
  void put(uint32_t code) {
    acc_ |= static_cast<uint64_t>(code) << filled_;
    filled_ += bits_;
    while (filled_ >= 8) {
      *out_++ = static_cast<uint8_t>(acc_);
      acc_ >>= 8;
      filled_ -= 8;
    }
  }
  // Writes the last partial byte (zero-padded). Call once, after the last put().
  void finish() {
    if (filled_ > 0) *out_++ = static_cast<uint8_t>(acc_);
    filled_ = 0;
    acc_ = 0;
  }

 private:
  uint8_t* out_;
  int bits_;
  int filled_ = 0;
  uint64_t acc_ = 0;
};

// Reads codes back in the order they were put; never reads past the bytes the codes occupy.
class BitReader {
 public:
  BitReader(const uint8_t* in, int bits) : in_(in), bits_(bits), mask_((1u << bits) - 1) {}
  uint32_t get() {
    while (filled_ < bits_) {
      acc_ |= static_cast<uint64_t>(*in_++) << filled_;
      filled_ += 8;
    }
    uint32_t code = static_cast<uint32_t>(acc_) & mask_;
    acc_ >>= bits_;
    filled_ -= bits_;
    return code;
  }

 private:
  const uint8_t* in_;
  int bits_;
  uint32_t mask_;
  int filled_ = 0;
  uint64_t acc_ = 0;
};

// Packs a tensor of codes (any integer or bool dtype, any shape, read in row-major order; every
// code in [0, 2^bits)) into a 1-D uint8 tensor of packed_bytes(numel, bits) bytes.
// Throws std::invalid_argument for bits outside [1, 16] or a code out of range.
at::Tensor pack_bits(const at::Tensor& codes, int bits);

// Unpacks `n` codes from `bytes` (1-D uint8 of exactly packed_bytes(n, bits) bytes): uint8 codes
// for bits <= 8, int32 codes for 9..16. Throws std::invalid_argument on a size mismatch.
at::Tensor unpack_bits(const at::Tensor& bytes, int64_t n, int bits);

// Sign bits straight from and to fp32 (signSGD, EF-signSGD), in the layout above with b = 1:
// pack_signs writes packed_bytes(n, 1) bytes, bit i = 1 for x_i >= 0 (0 for x_i < 0 and NaN),
// exactly pack_bits(x.ge(0), 1) without the intermediate tensors.
void pack_signs(const float* x, int64_t n, uint8_t* out);
// Its two forms, for tests that compare them: SSE2 (plain C++ without it), and AVX2, which only
// runs where simd_impl::have_avx2() (simd.h).
namespace simd_impl {
void pack_signs_sse2(const float* x, int64_t n, uint8_t* out);
void pack_signs_avx2(const float* x, int64_t n, uint8_t* out);
}  // namespace simd_impl
// Decodes n sign bits to fp32: `one` where a bit is 1, `zero` where it is 0. Throws
// std::invalid_argument on a size mismatch, as unpack_bits does.
at::Tensor unpack_signs(const at::Tensor& bytes, int64_t n, float one, float zero);
// The same with the same checks, into caller storage out[0, n).
void unpack_signs(const at::Tensor& bytes, int64_t n, float one, float zero, float* out);
// The same into out[0, n) from packed_bytes(n, 1) bytes at `in` (no checks).
void unpack_signs_into(const uint8_t* in, int64_t n, float one, float zero, float* out);
// Its two forms, for tests that compare them: `avx2` (only where simd_impl::have_avx2()) or the
// portable loops; the same values either way.
namespace simd_impl {
void unpack_signs_into(bool avx2, const uint8_t* in, int64_t n, float one, float zero, float* out);
}  // namespace simd_impl

}  // namespace cedar
