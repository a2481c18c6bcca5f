#include "algorithms/powersgd_products.h"

#include <ATen/Parallel.h>

#include <cstdint>
#include <vector>

#include "algorithms/codecs/compressor.h"

namespace cedar {
namespace {

// A seeded N(0, 1) tensor of `sizes` whose data start at the same offset within a 64-byte line as
// `like`'s, so that BLAS sees the operands' alignments of the real call.
at::Tensor probe_like(const at::Tensor& like, at::IntArrayRef sizes, uint64_t stream) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  at::Generator gen = make_generator(20191101, 0, numel, stream);
  at::Tensor storage = at::randn({numel + 16}, gen);
  const auto want = reinterpret_cast<uintptr_t>(like.data_ptr()) % 64;
  const auto have = reinterpret_cast<uintptr_t>(storage.data_ptr()) % 64;
  const int64_t offset = static_cast<int64_t>((want + 64 - have) % 64) / 4;
  return storage.narrow(0, offset, numel).view(sizes);
}

// Whether a product can take either form: fp32, contiguous, on the CPU, single or batched.
bool has_two_forms(const at::Tensor& m, const at::Tensor& small, const at::Tensor& out) {
  return m.is_cpu() && small.is_cpu() && out.is_cpu() && m.scalar_type() == at::kFloat &&
         small.scalar_type() == at::kFloat && out.scalar_type() == at::kFloat &&
         m.is_contiguous() && small.is_contiguous() && out.is_contiguous() &&
         (m.dim() == 2 || m.dim() == 3) && small.dim() == m.dim() && out.dim() == m.dim();
}

// Each matrix transposed (of a batch too).
at::Tensor tr(const at::Tensor& t) { return t.transpose(-2, -1); }

// out = a b, one matrix or a batch.
void product(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  if (a.dim() == 2)
    at::mm_out(out, a, b);
  else
    at::bmm_out(out, a, b);
}

// The transposed forms: p = (q^T m^T)^T, q = (p^T m)^T, through `tmp` (r x n or r x m rows).
void left_transposed(const at::Tensor& m, const at::Tensor& q, at::Tensor& p, at::Tensor& tmp) {
  product(tmp, tr(q), tr(m));
  p.copy_(tr(tmp));
}

void right_transposed(const at::Tensor& m, const at::Tensor& p, at::Tensor& q, at::Tensor& tmp) {
  product(tmp, tr(p), m);
  q.copy_(tr(tmp));
}

// The sizes of a single matrix (batch 0) or of a batch.
std::vector<int64_t> sizes_of(int64_t batch, int64_t rows, int64_t cols) {
  if (batch == 0) return {rows, cols};
  return {batch, rows, cols};
}

// `tmp`'s view of the scratch buffer for the transposed form writing `out`.
at::Tensor rows_of(at::Tensor& scratch, const at::Tensor& out) {
  if (scratch.numel() < out.numel()) scratch = at::empty({out.numel()});
  return scratch.narrow(0, 0, out.numel()).view(tr(out).sizes());
}

}  // namespace

const PowerSgdProducts::Choice& PowerSgdProducts::choice(const at::Tensor& m,
                                                         const at::Tensor& small,
                                                         const at::Tensor& out) {
  const int64_t batch = m.dim() == 3 ? m.size(0) : 0;
  const int64_t rows = m.size(-2), cols = m.size(-1), rank = small.size(-1);
  const Shape shape{batch, rows, cols, rank, at::get_num_threads()};
  auto it = choices_.find(shape);
  if (it != choices_.end()) return it->second;
  Choice c;
  const at::Tensor pm = probe_like(m, sizes_of(batch, rows, cols), 1);
  {  // P = M Q: small is Q (cols x r), out P (rows x r)
    const at::Tensor pq = probe_like(small, sizes_of(batch, cols, rank), 2);
    at::Tensor plain = probe_like(out, sizes_of(batch, rows, rank), 3);
    at::Tensor other = at::empty(sizes_of(batch, rows, rank));
    at::Tensor tmp = at::empty(sizes_of(batch, rank, rows));
    product(plain, pm, pq);
    left_transposed(pm, pq, other, tmp);
    c.left = at::equal(plain, other);
  }
  {  // Q = M^T P: small is P (rows x r), out Q (cols x r)
    const at::Tensor pp = probe_like(small, sizes_of(batch, rows, rank), 4);
    at::Tensor plain = probe_like(out, sizes_of(batch, cols, rank), 5);
    at::Tensor other = at::empty(sizes_of(batch, cols, rank));
    at::Tensor tmp = at::empty(sizes_of(batch, rank, cols));
    product(plain, tr(pm), pp);
    right_transposed(pm, pp, other, tmp);
    c.right = at::equal(plain, other);
  }
  return choices_.emplace(shape, c).first->second;
}

void PowerSgdProducts::left(const at::Tensor& m, const at::Tensor& q, at::Tensor& p) {
  if (!has_two_forms(m, q, p) || !choice(m, q, p).left) {
    product(p, m, q);
    return;
  }
  at::Tensor tmp = rows_of(scratch_, p);
  left_transposed(m, q, p, tmp);
}

void PowerSgdProducts::right(const at::Tensor& m, const at::Tensor& p, at::Tensor& q) {
  if (!has_two_forms(m, p, q) || !choice(m, p, q).right) {
    product(q, tr(m), p);
    return;
  }
  at::Tensor tmp = rows_of(scratch_, q);
  right_transposed(m, p, q, tmp);
}

int PowerSgdProducts::chosen(int64_t batch, int64_t rows, int64_t cols, int64_t rank,
                             bool right) const {
  auto it = choices_.find(Shape{batch, rows, cols, rank, at::get_num_threads()});
  if (it == choices_.end()) return -1;
  return (right ? it->second.right : it->second.left) ? 1 : 0;
}

int PowerSgdProducts::left_choice(int64_t rows, int64_t cols, int64_t rank, int64_t batch) const {
  return chosen(batch, rows, cols, rank, false);
}

int PowerSgdProducts::right_choice(int64_t rows, int64_t cols, int64_t rank, int64_t batch) const {
  return chosen(batch, rows, cols, rank, true);
}

}  // namespace cedar
