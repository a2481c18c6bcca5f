#include "runner/train/exchange_overlap.h"

#include <algorithm>

namespace cedar {

void ExchangeOverlap::add(double start, double end, double backward_start, double backward_end) {
  exchange += end - start;
  hidden += std::max(0.0, std::min(end, backward_end) - std::max(start, backward_start));
}

}  // namespace cedar
