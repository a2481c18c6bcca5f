// The device-generic counter uniforms and bit packing (generic_codecs.h): the definitions of
// counter_rng.h and bit_packing.h as tensor ops.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar::generic {
namespace {

// Blocks per pass of the AES rounds: on the CPU the int32 state and its temporaries stay within
// tens of MiB; on a device, whose memory is larger and where every op is a kernel launch, a pass
// of 2^21 blocks (8M elements, about 128 MiB per temporary) keeps the launches per tensor few.
constexpr int64_t kBlocksPerPassCpu = int64_t{1} << 18;
constexpr int64_t kBlocksPerPassDevice = int64_t{1} << 21;

at::TensorOptions ints(at::Device device) {
  return at::TensorOptions().dtype(at::kInt).device(device);
}
at::TensorOptions longs(at::Device device) {
  return at::TensorOptions().dtype(at::kLong).device(device);
}

// The AES round as T-tables (Daemen and Rijmen, "The Design of Rijndael", 2002, sec. 4.2): the
// state's four columns are 32-bit words (row r in bits 8r .. 8r + 7, the little-endian bytes of
// counter_rng.h), and the round's column c is T_0[a_0c] ^ T_1[a_1c] ^ T_2[a_2c] ^ T_3[a_3c] ^ k_c
// with a_rc the byte ShiftRows brings there (row r of column c + r). T_r[a] holds S[a] times row
// r's MixColumns coefficients; the four tables lie one after another (T_r at 256·r).
std::vector<int32_t> round_tables() {
  const uint8_t* s = CounterUniforms::sbox_table();
  auto xtime = [](uint32_t a) { return ((a << 1) ^ ((a & 0x80) ? 0x1b : 0)) & 0xff; };
  // Coefficient of input row r in output row o: (2 3 1 1) rotated right by o.
  static const int kCoefficient[4][4] = {{2, 3, 1, 1}, {1, 2, 3, 1}, {1, 1, 2, 3}, {3, 1, 1, 2}};
  std::vector<int32_t> t(1024);
  for (int r = 0; r < 4; ++r)
    for (int a = 0; a < 256; ++a) {
      const uint32_t v = s[a], x = xtime(v);
      uint32_t word = 0;
      for (int o = 0; o < 4; ++o) {
        const int c = kCoefficient[o][r];
        word |= (c == 1 ? v : c == 2 ? x : x ^ v) << (8 * o);
      }
      std::memcpy(&t[static_cast<size_t>(256 * r + a)], &word, 4);
    }
  return t;
}

// Signed 32-bit lanes holding the low 32 bits of v (int64): the same bits, no narrowing overflow.
at::Tensor low_word(const at::Tensor& v) {
  return v.bitwise_and(0xffffffffLL).bitwise_xor(0x80000000LL).sub(0x80000000LL).to(at::kInt);
}

// What the rounds need on `device`: the round keys as words ([kRounds + 1, 4]), the tables, and
// for each of the 16 (column, row) places of a round's input the state byte ShiftRows brings
// there and its table's offset.
struct RoundData {
  at::Tensor keys, tables, shift_rows, offsets, byte_shifts;
};

// (Copies, also on the CPU: the host arrays below do not outlive this call.)
RoundData round_data(const CounterUniforms& rng, at::Device device) {
  RoundData d;
  int32_t words[(CounterUniforms::kRounds + 1) * 4];
  std::memcpy(words, rng.round_keys(), sizeof words);
  d.keys =
      at::from_blob(words, {CounterUniforms::kRounds + 1, 4}, at::kInt).to(device, false, true);
  std::vector<int32_t> tables = round_tables();
  d.tables = at::from_blob(tables.data(), {1024}, at::kInt).to(device, false, true);
  int64_t perm[16];
  int32_t offset[16];
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) {
      perm[4 * c + r] = 4 * ((c + r) & 3) + r;
      offset[4 * c + r] = 256 * r;
    }
  d.shift_rows = at::from_blob(perm, {16}, at::kLong).to(device, false, true);
  d.offsets = at::from_blob(offset, {16}, at::kInt).to(device, false, true);
  d.byte_shifts = at::arange(0, 32, 8, ints(device));
  return d;
}

// The four words (int32, [count, 4]) of blocks j0 .. j0 + count after the whitening and kRounds
// AES rounds: word c of block j is w(key, 4j + c).
at::Tensor aes_blocks(const RoundData& d, int64_t j0, int64_t count) {
  const at::Device device = d.keys.device();
  const at::Tensor j = at::arange(j0, j0 + count, longs(device));
  at::Tensor st = at::stack({low_word(j), low_word(j.bitwise_right_shift(32)),
                             at::zeros({count}, ints(device)), at::zeros({count}, ints(device))},
                            1)
                      .bitwise_xor(d.keys[0]);
  for (int r = 1; r <= CounterUniforms::kRounds; ++r) {
    const at::Tensor bytes =
        st.unsqueeze(2).bitwise_right_shift(d.byte_shifts).bitwise_and(0xff).view({count, 16});
    const at::Tensor t =
        d.tables.index_select(0, bytes.index_select(1, d.shift_rows).add_(d.offsets).view({-1}))
            .view({count, 4, 4});
    st = t.select(2, 0)
             .bitwise_xor(t.select(2, 1))
             .bitwise_xor_(t.select(2, 2))
             .bitwise_xor_(t.select(2, 3))
             .bitwise_xor_(d.keys[r]);
  }
  return st;
}

// f(words of blocks [j, j + count)) over the blocks of elements [first, first + n), pass by pass;
// f returns that pass's values, which land in `out` in order.
template <class F>
void for_each_pass(const CounterUniforms& rng, int64_t first, int64_t n, at::Device device,
                   at::Tensor& out, F&& f) {
  const RoundData d = round_data(rng, device);
  const int64_t per_pass = device.is_cpu() ? kBlocksPerPassCpu : kBlocksPerPassDevice;
  int64_t done = 0;
  while (done < n) {
    const int64_t at_elem = first + done, j = at_elem / 4, head = at_elem % 4;
    const int64_t count = std::min(per_pass, (head + n - done + 3) / 4);
    const int64_t take = std::min(n - done, 4 * count - head);
    const at::Tensor values = f(aes_blocks(d, j, count)).reshape({-1});
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
  for_each_pass(rng, first, n, device, out,
                [](const at::Tensor& w) { return w.to(at::kLong).bitwise_and(0xffffffffLL); });
  return out;
}

at::Tensor counter_uniforms(const CounterUniforms& rng, int64_t first, int64_t n,
                            at::Device device) {
  check_range(first, n, "counter_uniforms");
  at::Tensor out = at::empty({n}, at::TensorOptions().dtype(at::kFloat).device(device));
  for_each_pass(rng, first, n, device, out, [](const at::Tensor& w) {
    // (word >> 8)·2^-24: the top 24 bits, exact in fp32, times a power of two.
    return w.bitwise_right_shift(8).bitwise_and_(0xffffff).to(at::kFloat).mul_(1.0f / 16777216.0f);
  });
  return out;
}

at::Tensor pack_codes(const at::Tensor& codes, int bits) {
  if (bits < 1 || bits > kMaxPackedBits)
    throw std::invalid_argument("pack_codes: bits must be in [1, " +
                                std::to_string(kMaxPackedBits) + "], got " + std::to_string(bits));
  const at::Device device = codes.device();
  const int64_t n = codes.numel();
  const int64_t bytes = packed_bytes(n, bits);
  if (bits <= 8) {
    // Eight codes fill `bits` bytes: joined into one 64-bit word (code k at bit k·b; the top
    // field may set the sign bit, which only the bytes below read), then cut into bytes.
    const int64_t groups = (n + 7) / 8;
    const at::Tensor words =
        at::constant_pad_nd(codes.reshape({-1}).to(at::kLong), {0, 8 * groups - n}, 0)
            .view({groups, 8})
            .bitwise_left_shift(at::arange(0, 8 * bits, bits, longs(device)))
            .sum(1);
    return words.unsqueeze(1)
        .bitwise_right_shift(at::arange(0, 8 * bits, 8, longs(device)))
        .bitwise_and_(0xff)
        .to(at::kByte)
        .view({-1})
        .narrow(0, 0, bytes);
  }
  // Stream bit k = bit (k mod b) of code k / b; eight stream bits make a byte, LSB first.
  const at::Tensor stream = codes.reshape({-1, 1})
                                .to(at::kInt)
                                .bitwise_right_shift(at::arange(bits, ints(device)))
                                .bitwise_and(1)
                                .reshape({-1});
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
  if (bits <= 8) {  // `bits` bytes hold eight codes: one 64-bit word, cut into codes
    const int64_t groups = (n + 7) / 8;
    const at::Tensor words = at::constant_pad_nd(bytes.reshape({-1}).to(at::kLong),
                                                 {0, groups * bits - bytes.numel()}, 0)
                                 .view({groups, bits})
                                 .bitwise_left_shift(at::arange(0, 8 * bits, 8, longs(device)))
                                 .sum(1);
    return words.unsqueeze(1)
        .bitwise_right_shift(at::arange(0, 8 * bits, bits, longs(device)))
        .bitwise_and_((1 << bits) - 1)
        .to(at::kInt)
        .view({-1})
        .narrow(0, 0, n);
  }
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
