#pragma once
// A calibrated profile checked on timings it was not fitted on (`cedar network fit --held-out`):
// each held-out size priced by the profile's fit of its collective and P, in the band that holds
// it, against the median it was timed at. No LibTorch, no MPI here.
#include <vector>

#include "comm/calibrated_profile.h"

namespace cedar {

struct HeldOutPrice {
  CollectiveTiming timed;  // the held-out median
  double modeled = 0;      // the profile's seconds for one call of it
  double relative_error() const { return (modeled - timed.seconds) / timed.seconds; }
};

// One price per timing, in their order. Throws std::invalid_argument naming the collective and P
// of a timing the profile has no fit of at that P (a fit at another P would price another
// fabric's collective).
std::vector<HeldOutPrice> price_held_out(const NetworkProfile& profile,
                                         const std::vector<CollectiveTiming>& held_out);

}  // namespace cedar
