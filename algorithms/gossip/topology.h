#pragma once
// Communication graphs of decentralized (gossip) training and their mixing matrices, from the
// surveys' taxonomy (Tang et al. 2020; Ouyang et al. 2021) and the papers that use them: the ring
// of D-PSGD (Lian et al., NeurIPS 2017), the 2-D torus and the exponential graph.
//
// Every graph here is a Cayley graph of a cyclic group (ring, exponential) or of a product of two
// (torus): rank r's neighbours are r + s for the shifts s of a set S closed under negation, with
// duplicate and zero shifts removed (a ring of 2 has one neighbour, not two). So every rank has
// the same degree d = |S|, and
//   W = (I + Σ_{s∈S} T_s) / (d + 1),   W_rr = W_r,r+s = 1/(d + 1),
// uniform weights including the rank itself: symmetric (S = −S) and doubly stochastic (every row
// and column holds d + 1 entries of 1/(d + 1)). For the ring this is D-PSGD's W_ii = W_i,i±1 = 1/3.
//
// The exchange: one permutation per shift, "send to to[r], receive from from[r] = to⁻¹[r]". Every
// rank walks the shifts in the same order and makes one sendrecv per shift, so rank r's k-th
// sendrecv sends to the rank whose k-th sendrecv receives from r: no exchange can deadlock.
//
//   ring         shifts ±1 mod P.
//   torus        ranks laid out as rows × cols (r = i·cols + j), shifts ±1 along each dimension,
//                wrapping around; rows = the largest divisor of P not above √P (the most square
//                factoring) unless configured. A dimension of 1 adds no shift; of 2, one.
//   exponential  shifts ±2^k mod P for every 2^k < P (the undirected exponential graph): degree
//                at most 2·⌈log2 P⌉ (P = 8: shifts 1, 7, 2, 6, 4, degree 5).
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "config/params.h"

namespace cedar {

// One exchange round: rank r sends to to[r] and receives from from[r].
struct Permutation {
  std::vector<int> to;
  std::vector<int> from;
};

struct Topology {
  std::string name;  // ring | torus | exponential
  int size = 1;      // P
  int rows = 1;      // torus layout (rows × cols); 1 for the others
  int cols = 1;
  std::vector<Permutation> exchanges;  // one per distinct non-zero shift, in a fixed order
  // Uniform weights: 1 / (degree + 1) for the rank itself and each neighbour.
  int degree() const { return static_cast<int>(exchanges.size()); }
  double weight() const { return 1.0 / (degree() + 1); }
};

// The names make_topology accepts, for parameter checks and help texts.
const std::vector<std::string>& topology_names();

// The graph keys every gossip algorithm takes (`topology`, `torus_rows`), for its parameter
// struct's visit().
struct GraphParams {
  std::string topology = "ring";
  int64_t torus_rows = 0;
  template <class V>
  void visit(V& v) {
    v("topology", topology, "communication graph: ring, torus or exponential (+-2^k neighbours)",
      one_of(topology_names()));
    v("torus_rows", torus_rows, "rows of the torus (0: the most square factoring of the ranks)",
      at_least(0));
  }
};

// The graph `name` on `size` ranks. torus_rows: the torus's rows (0: the most square factoring;
// otherwise it must divide size). Throws std::invalid_argument naming the bad value.
Topology make_topology(const std::string& name, int size, int torus_rows = 0);

// W as a dense size × size fp64 matrix: W[r][c] = weight() where c is r or a neighbour of r.
at::Tensor mixing_matrix(const Topology& topology);

}  // namespace cedar
