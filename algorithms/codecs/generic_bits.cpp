// The device-generic counter uniforms and bit packing (generic_codecs.h): the definitions of
// counter_rng.h and bit_packing.h as tensor ops.
#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar::generic {
namespace {

// Blocks per pass of the AES rounds: the int32 state and its temporaries stay within tens of MiB.
constexpr int64_t kBlocksPerPass = int64_t{1} << 18;

at::TensorOptions ints(at::Device device) {
  return at::TensorOptions().dtype(at::kInt).device(device);
}
at::TensorOptions longs(at::Device device) {
  return at::TensorOptions().dtype(at::kLong).device(device);
}

// Multiplication by x in GF(2^8), on int32 bytes.
at::Tensor xtime(const at::Tensor& a) {
  return a.bitwise_left_shift(1).bitwise_and(0xff).bitwise_xor(a.bitwise_right_shift(7).mul(0x1b));
}

// The 16 bytes (int32, [count, 16]) of blocks j0 .. j0 + count after the whitening and kRounds
// AES rounds: the portable path of counter_rng.cpp, column c = bytes 4c .. 4c + 3.
at::Tensor aes_blocks(const at::Tensor& keys, const at::Tensor& sbox, const at::Tensor& shift_rows,
                      int64_t j0, int64_t count) {
  const at::Device device = keys.device();
  const at::Tensor j = at::arange(j0, j0 + count, longs(device)).unsqueeze(1);
  const at::Tensor low =
      j.bitwise_right_shift(at::arange(0, 64, 8, longs(device))).bitwise_and(0xff).to(at::kInt);
  at::Tensor st = at::cat({low, at::zeros({count, 8}, ints(device))}, 1).bitwise_xor(keys[0]);
  for (int r = 1; r <= CounterUniforms::kRounds; ++r) {
    // ShiftRows and SubBytes, then MixColumns with the round key.
    const at::Tensor t =
        sbox.index_select(0, st.index_select(1, shift_rows).reshape({-1})).view({count, 4, 4});
    const at::Tensor a0 = t.select(2, 0), a1 = t.select(2, 1), a2 = t.select(2, 2),
                     a3 = t.select(2, 3);
    const at::Tensor x0 = xtime(a0), x1 = xtime(a1), x2 = xtime(a2), x3 = xtime(a3);
    const at::Tensor rest = a1.bitwise_xor(a2).bitwise_xor(a3);  // shared by rows 0 and 1
    st = at::stack({x0.bitwise_xor(x1).bitwise_xor(rest),
                    a0.bitwise_xor(x1).bitwise_xor(x2).bitwise_xor(a2).bitwise_xor(a3),
                    a0.bitwise_xor(a1).bitwise_xor(x2).bitwise_xor(x3).bitwise_xor(a3),
                    x0.bitwise_xor(a0).bitwise_xor(a1).bitwise_xor(a2).bitwise_xor(x3)},
                   2)
             .view({count, 16})
             .bitwise_xor(keys[r]);
  }
  return st;
}

// f(bytes of blocks [j, j + count), first element's offset in them) over the blocks of elements
// [first, first + n), pass by pass; f returns that pass's values, which land in `out` in order.
template <class F>
void for_each_pass(const CounterUniforms& rng, int64_t first, int64_t n, at::Device device,
                   at::Tensor& out, F&& f) {
  const at::Tensor keys = at::from_blob(const_cast<uint8_t*>(rng.round_keys()),
                                        {CounterUniforms::kRounds + 1, 16}, at::kByte)
                              .to(device, at::kInt);
  const at::Tensor sbox =
      at::from_blob(const_cast<uint8_t*>(CounterUniforms::sbox_table()), {256}, at::kByte)
          .to(device, at::kInt);
  int64_t perm[16];
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) perm[4 * c + r] = 4 * ((c + r) & 3) + r;
  const at::Tensor shift_rows = at::from_blob(perm, {16}, at::kLong).to(device);
  int64_t done = 0;
  while (done < n) {
    const int64_t at_elem = first + done, j = at_elem / 4, head = at_elem % 4;
    const int64_t count = std::min(kBlocksPerPass, (head + n - done + 3) / 4);
    const int64_t take = std::min(n - done, 4 * count - head);
    const at::Tensor values = f(aes_blocks(keys, sbox, shift_rows, j, count)).reshape({-1});
    out.narrow(0, done, take).copy_(values.narrow(0, head, take));
    done += take;
  }
}

void check_range(int64_t first, int64_t n, const char* who) {
  if (first < 0 || n < 0)
    throw std::invalid_argument(std::string(who) + ": elements [" + std::to_string(first) + ", +" +
                                std::to_string(n) + ") out of range");
}

}  // namespace

at::Tensor counter_words(const CounterUniforms& rng, int64_t first, int64_t n, at::Device device) {
  check_range(first, n, "counter_words");
  at::Tensor out = at::empty({n}, longs(device));
  for_each_pass(rng, first, n, device, out, [](const at::Tensor& st) {
    const at::Tensor b = st.view({-1, 4, 4}).to(at::kLong);  // word w = bytes 4w .. 4w + 3
    return b.select(2, 0)
        .bitwise_or(b.select(2, 1).bitwise_left_shift(8))
        .bitwise_or(b.select(2, 2).bitwise_left_shift(16))
        .bitwise_or(b.select(2, 3).bitwise_left_shift(24));
  });
  return out;
}

at::Tensor counter_uniforms(const CounterUniforms& rng, int64_t first, int64_t n,
                            at::Device device) {
  check_range(first, n, "counter_uniforms");
  at::Tensor out = at::empty({n}, at::TensorOptions().dtype(at::kFloat).device(device));
  for_each_pass(rng, first, n, device, out, [](const at::Tensor& st) {
    // (word >> 8)·2^-24: the top 24 bits, exact in fp32, times a power of two.
    const at::Tensor b = st.view({-1, 4, 4});
    const at::Tensor top = b.select(2, 1)
                               .bitwise_or(b.select(2, 2).bitwise_left_shift(8))
                               .bitwise_or(b.select(2, 3).bitwise_left_shift(16));
    return top.to(at::kFloat).mul_(1.0f / 16777216.0f);
  });
  return out;
}

at::Tensor pack_codes(const at::Tensor& codes, int bits) {
  if (bits < 1 || bits > kMaxPackedBits)
    throw std::invalid_argument("pack_codes: bits must be in [1, " +
                                std::to_string(kMaxPackedBits) + "], got " + std::to_string(bits));
  const at::Device device = codes.device();
  const int64_t n = codes.numel();
  // Stream bit k = bit (k mod b) of code k / b; eight stream bits make a byte, LSB first.
  const at::Tensor stream = codes.reshape({-1, 1})
                                .to(at::kInt)
                                .bitwise_right_shift(at::arange(bits, ints(device)))
                                .bitwise_and(1)
                                .reshape({-1});
  const int64_t bytes = packed_bytes(n, bits);
  const at::Tensor padded = at::constant_pad_nd(stream, {0, 8 * bytes - n * bits}, 0);
  return padded.view({bytes, 8})
      .bitwise_left_shift(at::arange(8, ints(device)))
      .sum(1, false, at::kInt)
      .to(at::kByte);
}

at::Tensor unpack_codes(const at::Tensor& bytes, int64_t n, int bits) {
  if (bits < 1 || bits > kMaxPackedBits || bytes.numel() != packed_bytes(n, bits))
    throw std::invalid_argument("unpack_codes: " + std::to_string(bytes.numel()) + " bytes for " +
                                std::to_string(n) + " codes of " + std::to_string(bits) +
                                " bits (expected " + std::to_string(packed_bytes(n, bits)) + ")");
  const at::Device device = bytes.device();
  const at::Tensor stream = bytes.reshape({-1, 1})
                                .to(at::kInt)
                                .bitwise_right_shift(at::arange(8, ints(device)))
                                .bitwise_and(1)
                                .reshape({-1})
                                .narrow(0, 0, n * bits);
  return stream.view({n, bits})
      .bitwise_left_shift(at::arange(bits, ints(device)))
      .sum(1, false, at::kInt);
}

at::Tensor reinterpret(const at::Tensor& bytes, at::ScalarType type) {
  const int64_t size = static_cast<int64_t>(c10::elementSize(type));
  at::Tensor b = bytes.reshape({-1});
  if (b.numel() % size)
    throw std::invalid_argument("reinterpret: " + std::to_string(b.numel()) +
                                " bytes are not whole " + std::string(c10::toString(type)) +
                                " values");
  if (!b.is_contiguous() || b.storage_offset() % size) b = b.clone();
  return b.view(type);
}

}  // namespace cedar::generic
