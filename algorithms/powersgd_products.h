#pragma once
// PowerSGD's two products with its n x m gradient matrix M at rank r, P = M Q (n x r) and
// Q = M^T P (m x r), computed by the faster of two BLAS formulations that give the same bits; the
// same for a batch of B matrices (B x n x m, batch_same_shape) through batched products.
//
// LibTorch's CPU BLAS (MKL in the torch wheel) computes the same product at very different speeds
// depending on how it is asked: on one thread, Q = M^T P for a 15,000 x 1,000 M took 96-102 ms as
// at::mm(M^T, P) and 6-8 ms as the transpose of P^T M, and VGG-16's products took 50 ms where
// 14 ms would do (batched: 46 against 15 ms for VGG-16's five 512 x 4,608 matrices). Both forms
// usually sum each output in the same order and give identical bits, but not always (a 64 x 27 M
// differs in the last bit). So the first time a (rows, columns, rank, threads) shape is met, both
// forms run on seeded random operands placed at the same 64-byte alignments as the real ones, and
// the transposed form is used for that shape only if its result is bitwise equal to the plain one;
// otherwise the plain at::mm_out call stays. Two different summation orders agreeing on every
// output of a random Gaussian probe does not happen in practice, so the results are those of the
// plain calls. Tensors off the CPU, or of another dtype than fp32, always take the plain calls.
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace cedar {

class PowerSgdProducts {
 public:
  // p <- m q: m is n x m, q m x r, p n x r (contiguous rows); or a batch of them, B x n x m,
  // B x m x r and B x n x r (at::bmm_out).
  void left(const at::Tensor& m, const at::Tensor& q, at::Tensor& p);
  // q <- m^T p (each matrix of a batch transposed).
  void right(const at::Tensor& m, const at::Tensor& p, at::Tensor& q);

  // Which forms the probes chose (tests, benchmarks): -1 not probed yet, 0 plain, 1 transposed.
  // batch 0: single matrices; B >= 1: batches of B.
  int left_choice(int64_t rows, int64_t cols, int64_t rank, int64_t batch = 0) const;
  int right_choice(int64_t rows, int64_t cols, int64_t rank, int64_t batch = 0) const;

 private:
  // batch (0 for a single matrix), rows, columns, rank, threads
  using Shape = std::tuple<int64_t, int64_t, int64_t, int64_t, int>;
  struct Choice {
    bool left = false, right = false;  // the transposed form for P = M Q / Q = M^T P
  };
  const Choice& choice(const at::Tensor& m, const at::Tensor& small, const at::Tensor& out);
  int chosen(int64_t batch, int64_t rows, int64_t cols, int64_t rank, bool right) const;

  std::map<Shape, Choice> choices_;
  at::Tensor scratch_;  // the ([B x] r x n or m) product of the transposed form
};

}  // namespace cedar
