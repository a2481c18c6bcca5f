// The device-generic QSGD and TernGrad codecs (generic_codecs.h): the operations of
// qsgd_encode.cpp, qsgd_decode.cpp and terngrad_codec.cpp's scalar loops, elementwise on tensors,
// in the same precision and order.
#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar::generic {
namespace {

at::TensorOptions floats(at::Device device) {
  return at::TensorOptions().dtype(at::kFloat).device(device);
}

void check_input(const at::Tensor& x, const char* who) {
  if (!x.defined() || x.dim() != 1 || x.scalar_type() != at::kFloat || !x.is_contiguous())
    throw std::invalid_argument(std::string(who) + ": expected a 1-D contiguous fp32 tensor, got " +
                                (x.defined() ? x.toString() : std::string("an undefined tensor")));
}

// |x| with NaNs as 0: max_abs (simd.h) skips NaNs, and a maximum is order-free.
at::Tensor abs_skipping_nan(const at::Tensor& x) {
  const at::Tensor a = x.abs();
  return at::where(at::isnan(a), at::zeros({}, a.options()), a);
}

// The bucket of every element of x[0, n).
at::Tensor bucket_of(int64_t n, int64_t bucket, at::Device device) {
  return at::arange(n, at::TensorOptions().dtype(at::kLong).device(device)).div(bucket, "floor");
}

}  // namespace

at::Tensor qsgd_norms(const QsgdFormat& f, const at::Tensor& x) {
  check_input(x, "qsgd_norms");
  const int64_t n = x.numel(), m = f.buckets(n);
  const at::Device device = x.device();
  if (m == 0) return at::empty({0}, floats(device));
  if (f.max_norm)
    return at::zeros({m}, floats(device))
        .scatter_reduce_(0, bucket_of(n, f.bucket, device), abs_skipping_nan(x), "amax");
  return qsgd_sums_of_squares(f, x).sqrt().to(at::kFloat);
}

at::Tensor qsgd_sums_of_squares(const QsgdFormat& f, const at::Tensor& x) {
  check_input(x, "qsgd_sums_of_squares");
  const int64_t n = x.numel(), m = f.buckets(n);
  const at::Device device = x.device();
  if (m == 0) return at::empty({0}, at::TensorOptions().dtype(at::kDouble).device(device));
  // The eight-partial-sum order of sum_of_squares: element p of a bucket goes into partial sum
  // p mod 8 at row p / 8. Each bucket is laid out as rows of eight (zeros after its end: adding
  // +0 to a sum of squares leaves it as it is), and the rows are added one after another, all
  // buckets at once.
  const int64_t span = std::min(f.bucket, n), rows = (span + 7) / 8;
  const at::Tensor pos = at::arange(n, at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor b = pos.div(f.bucket, "floor");
  const at::Tensor slot = b.mul(rows * 8).add_(pos.sub(b.mul(f.bucket)));
  const at::Tensor wide = x.to(at::kDouble);
  const at::Tensor laid = at::zeros({m * rows * 8}, wide.options())
                              .index_copy_(0, slot, wide.mul(wide))
                              .view({m, rows, 8});
  at::Tensor s = at::zeros({m, 8}, wide.options());
  for (int64_t r = 0; r < rows; ++r) s.add_(laid.select(1, r));
  auto col = [&](int j) { return s.select(1, j); };
  return col(0)
      .add(col(1))
      .add_(col(2).add(col(3)))
      .add_(col(4).add(col(5)).add_(col(6).add(col(7))));
}

at::Tensor qsgd_encode(const QsgdFormat& f, const at::Tensor& x, const at::Tensor& norms,
                       const CounterUniforms& rng) {
  check_input(x, "qsgd_encode");
  const int64_t n = x.numel();
  const at::Device device = x.device();
  if (norms.numel() != f.buckets(n) || norms.scalar_type() != at::kFloat)
    throw std::invalid_argument("qsgd_encode: " + std::to_string(norms.numel()) + " norms for " +
                                std::to_string(f.buckets(n)) + " buckets");
  const float s = static_cast<float>((1u << f.bits) - 1);
  const at::Tensor nm = norms.to(device).contiguous();
  // scale = s / norm (0 for a zero or NaN norm), per bucket, then per element.
  const at::Tensor scale =
      at::where(nm > 0, at::full_like(nm, s).div_(nm), at::zeros({}, nm.options()))
          .index_select(0, bucket_of(n, f.bucket, device));
  at::Tensor a = x.abs().mul_(scale);
  a = at::where(a <= s, a, at::full({}, s, a.options()));  // NaN and rounding: at most s
  const at::Tensor whole = a.to(at::kInt);                 // floor: 0 <= a <= s
  const at::Tensor up = counter_uniforms(rng, 0, n, device).lt(a.sub(whole.to(at::kFloat)));
  const at::Tensor level = whole.add(up.to(at::kInt));
  const at::Tensor negative = level.ne(0).logical_and_(x.lt(0)).to(at::kInt);
  const at::Tensor code = level.bitwise_or(negative.bitwise_left_shift(f.bits));
  return at::cat({nm.view(at::kByte), pack_codes(code, f.bits + 1)});
}

at::Tensor qsgd_decode(const QsgdFormat& f, const at::Tensor& payload, int64_t n) {
  const int64_t m = f.buckets(n);
  const int64_t expected = 4 * m + packed_bytes(n, f.bits + 1);
  if (payload.scalar_type() != at::kByte || payload.numel() != expected)
    throw std::invalid_argument("qsgd: a payload of " + std::to_string(payload.numel()) +
                                " bytes for " + std::to_string(n) + " elements (expected " +
                                std::to_string(expected) + ")");
  const at::Device device = payload.device();
  const at::Tensor bytes = payload.reshape({-1});
  const at::Tensor norms = reinterpret(bytes.narrow(0, 0, 4 * m), at::kFloat);
  const at::Tensor code = unpack_codes(bytes.narrow(0, 4 * m, expected - 4 * m), n, f.bits + 1);
  const int32_t levels = (1 << f.bits) - 1;
  // level·(norm/s) in fp32, its sign bit flipped where the code's sign bit is set.
  const at::Tensor unit = norms.div(static_cast<float>(levels));
  const at::Tensor mag = code.bitwise_and(levels)
                             .to(at::kFloat)
                             .mul_(unit.index_select(0, bucket_of(n, f.bucket, device)));
  return at::where(code.bitwise_right_shift(f.bits).to(at::kBool), mag.neg(), mag);
}

at::Tensor ternary_max_abs(const at::Tensor& x) {
  check_input(x, "ternary_max_abs");
  if (x.numel() == 0) return at::zeros({}, x.options());
  return abs_skipping_nan(x).max();
}

at::Tensor ternary_clip(const at::Tensor& x, double c) {
  check_input(x, "ternary_clip");
  const int64_t n = x.numel();
  if (!(c > 0 && n > 0)) return at::full({}, std::numeric_limits<float>::infinity(), x.options());
  // The statistics of terngrad_codec.h (d = x − x_0 in fp64) with LibTorch's sums.
  const at::Tensor d = x.to(at::kDouble).sub(x.narrow(0, 0, 1).to(at::kDouble));
  const at::Tensor sum = d.sum(), sum_sq = d.mul(d).sum();
  const double nn = static_cast<double>(n);
  const at::Tensor var = sum_sq.sub(sum.mul(sum).div(nn)).div(nn).clamp_min(0.0);
  return var.sqrt().mul(c).to(at::kFloat);
}

at::Tensor ternarize(const at::Tensor& x, float s, float t, const CounterUniforms& rng) {
  check_input(x, "ternarize");
  const int64_t n = x.numel();
  const at::Tensor ax = x.abs();
  const at::Tensor tt = at::full({}, t, ax.options());
  const at::Tensor a = at::where(tt.lt(ax), tt, ax);  // std::min(|x|, t)
  const at::Tensor kept = counter_uniforms(rng, 0, n, x.device()).mul_(s).lt(a);
  const at::Tensor code = kept.to(at::kInt).mul(x.lt(0).to(at::kInt).add(1));  // 0, 1 or 2
  return pack_codes(code, 2);
}

void add_ternary(const at::Tensor& codes, int64_t n, const float value[4], bool first,
                 at::Tensor& sum) {
  float v[4];
  for (int c = 0; c < 4; ++c) v[c] = first ? 0.0f + value[c] : value[c];
  const at::Tensor table = at::from_blob(v, {4}, at::kFloat).to(sum.device());
  const at::Tensor e = table.index_select(0, unpack_codes(codes, n, 2));
  if (first) {
    sum.view({-1}).copy_(e);
  } else {
    sum.view({-1}).add_(e);
  }
}

}  // namespace cedar::generic
