#include "algorithms/powersgd_products.h"

#include <ATen/Parallel.h>

#include <cstdint>

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

bool probed(const at::Tensor& m, const at::Tensor& small, const at::Tensor& out) {
  return m.is_cpu() && small.is_cpu() && out.is_cpu() && m.scalar_type() == at::kFloat &&
         small.scalar_type() == at::kFloat && out.scalar_type() == at::kFloat &&
         m.is_contiguous() && small.is_contiguous() && out.is_contiguous();
}

// The transposed forms: out = (small^T m)^T for M^T P, out = (small^T m^T)^T for M Q.
void left_transposed(const at::Tensor& m, const at::Tensor& q, at::Tensor& p, at::Tensor& tmp) {
  at::mm_out(tmp, q.t(), m.t());
  p.copy_(tmp.t());
}

void right_transposed(const at::Tensor& m, const at::Tensor& p, at::Tensor& q, at::Tensor& tmp) {
  at::mm_out(tmp, p.t(), m);
  q.copy_(tmp.t());
}

}  // namespace

const PowerSgdProducts::Choice& PowerSgdProducts::choice(const at::Tensor& m,
                                                         const at::Tensor& small,
                                                         const at::Tensor& out) {
  const int64_t rows = m.size(0), cols = m.size(1), rank = small.size(1);
  const Shape shape{rows, cols, rank, at::get_num_threads()};
  auto it = choices_.find(shape);
  if (it != choices_.end()) return it->second;
  Choice c;
  const at::Tensor pm = probe_like(m, {rows, cols}, 1);
  at::Tensor tmp;
  {  // P = M Q: small is Q (cols x r), out P (rows x r)
    const at::Tensor pq = probe_like(small, {cols, rank}, 2);
    at::Tensor plain = probe_like(out, {rows, rank}, 3), other = at::empty({rows, rank});
    at::mm_out(plain, pm, pq);
    tmp = at::empty({rank, rows});
    left_transposed(pm, pq, other, tmp);
    c.left = at::equal(plain, other);
  }
  {  // Q = M^T P: small is P (rows x r), out Q (cols x r)
    const at::Tensor pp = probe_like(small, {rows, rank}, 4);
    at::Tensor plain = probe_like(out, {cols, rank}, 5), other = at::empty({cols, rank});
    at::mm_out(plain, pm.t(), pp);
    tmp = at::empty({rank, cols});
    right_transposed(pm, pp, other, tmp);
    c.right = at::equal(plain, other);
  }
  return choices_.emplace(shape, c).first->second;
}

void PowerSgdProducts::left(const at::Tensor& m, const at::Tensor& q, at::Tensor& p) {
  if (!probed(m, q, p) || !choice(m, q, p).left) {
    at::mm_out(p, m, q);
    return;
  }
  if (scratch_.numel() < p.numel()) scratch_ = at::empty({p.numel()});
  at::Tensor tmp = scratch_.narrow(0, 0, p.numel()).view({p.size(1), p.size(0)});
  left_transposed(m, q, p, tmp);
}

void PowerSgdProducts::right(const at::Tensor& m, const at::Tensor& p, at::Tensor& q) {
  if (!probed(m, p, q) || !choice(m, p, q).right) {
    at::mm_out(q, m.t(), p);
    return;
  }
  if (scratch_.numel() < q.numel()) scratch_ = at::empty({q.numel()});
  at::Tensor tmp = scratch_.narrow(0, 0, q.numel()).view({q.size(1), q.size(0)});
  right_transposed(m, p, q, tmp);
}

int PowerSgdProducts::chosen(int64_t rows, int64_t cols, int64_t rank, bool right) const {
  auto it = choices_.find(Shape{rows, cols, rank, at::get_num_threads()});
  if (it == choices_.end()) return -1;
  return (right ? it->second.right : it->second.left) ? 1 : 0;
}

int PowerSgdProducts::left_choice(int64_t rows, int64_t cols, int64_t rank) const {
  return chosen(rows, cols, rank, false);
}

int PowerSgdProducts::right_choice(int64_t rows, int64_t cols, int64_t rank) const {
  return chosen(rows, cols, rank, true);
}

}  // namespace cedar
