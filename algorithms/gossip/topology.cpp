#include "algorithms/gossip/topology.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace cedar {
namespace {

// A shift of the group Z_rows × Z_cols (the cyclic graphs use rows = 1).
using Shift = std::pair<int, int>;

int mod(int a, int n) { return ((a % n) + n) % n; }

// Adds the shift reduced mod (rows, cols) unless it is zero or already there.
void add_shift(std::vector<Shift>& shifts, int di, int dj, int rows, int cols) {
  const Shift s{mod(di, rows), mod(dj, cols)};
  if (s == Shift{0, 0} || std::find(shifts.begin(), shifts.end(), s) != shifts.end()) return;
  shifts.push_back(s);
}

Permutation permutation_of(const Shift& s, int rows, int cols) {
  const int n = rows * cols;
  Permutation p;
  p.to.resize(static_cast<size_t>(n));
  p.from.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const int i = r / cols, j = r % cols;
    const int dest = mod(i + s.first, rows) * cols + mod(j + s.second, cols);
    p.to[static_cast<size_t>(r)] = dest;
    p.from[static_cast<size_t>(dest)] = r;
  }
  return p;
}

// The largest divisor of n not above √n.
int squarest_rows(int n) {
  int best = 1;
  for (int d = 1; static_cast<int64_t>(d) * d <= n; ++d)
    if (n % d == 0) best = d;
  return best;
}

}  // namespace

const std::vector<std::string>& topology_names() {
  static const std::vector<std::string> names = {"ring", "torus", "exponential"};
  return names;
}

Topology make_topology(const std::string& name, int size, int torus_rows) {
  if (size < 1) throw std::invalid_argument("topology: size " + std::to_string(size) + " < 1");
  Topology t;
  t.name = name;
  t.size = size;
  t.cols = size;
  std::vector<Shift> shifts;
  if (name == "ring") {
    add_shift(shifts, 0, 1, 1, size);
    add_shift(shifts, 0, -1, 1, size);
  } else if (name == "exponential") {
    for (int64_t k = 1; k < size; k *= 2) {
      add_shift(shifts, 0, static_cast<int>(k), 1, size);
      add_shift(shifts, 0, static_cast<int>(-k), 1, size);
    }
  } else if (name == "torus") {
    if (torus_rows < 0 || (torus_rows > 0 && size % torus_rows != 0))
      throw std::invalid_argument("algorithm.torus_rows " + std::to_string(torus_rows) +
                                  " does not divide the " + std::to_string(size) + " ranks");
    t.rows = torus_rows > 0 ? torus_rows : squarest_rows(size);
    t.cols = size / t.rows;
    add_shift(shifts, 0, 1, t.rows, t.cols);
    add_shift(shifts, 0, -1, t.rows, t.cols);
    add_shift(shifts, 1, 0, t.rows, t.cols);
    add_shift(shifts, -1, 0, t.rows, t.cols);
  } else {
    throw std::invalid_argument("topology: unknown topology '" + name +
                                "' (known: ring, torus, exponential)");
  }
  for (const auto& s : shifts) t.exchanges.push_back(permutation_of(s, t.rows, t.cols));
  return t;
}

at::Tensor mixing_matrix(const Topology& t) {
  at::Tensor w = at::zeros({t.size, t.size}, at::kDouble);
  auto a = w.accessor<double, 2>();
  for (int r = 0; r < t.size; ++r) {
    a[r][r] = t.weight();
    for (const auto& p : t.exchanges) a[r][p.to[static_cast<size_t>(r)]] = t.weight();
  }
  return w;
}

}  // namespace cedar
