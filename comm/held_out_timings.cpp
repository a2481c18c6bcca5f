#include "comm/held_out_timings.h"

#include <stdexcept>
#include <string>

#include "comm/alpha_beta_least_squares.h"

namespace cedar {

std::vector<HeldOutPrice> price_held_out(const NetworkProfile& profile,
                                         const std::vector<CollectiveTiming>& held_out) {
  std::vector<HeldOutPrice> prices;
  for (const CollectiveTiming& t : held_out) {
    const auto fits = profile.collectives.find(t.op);
    if (fits == profile.collectives.end() || !fits->second.count(t.world))
      throw std::invalid_argument(
          "held-out timing of " + t.op + " at P = " + std::to_string(t.world) + ": the profile '" +
          profile.name + "' has no fit of " + t.op + " at P = " + std::to_string(t.world));
    const TimedSample terms = collective_terms(t.op, t.world, t.bytes);
    prices.push_back(
        {t, profile.cost(t.op, t.world, terms.latency_steps, terms.bus_bytes, t.bytes)});
  }
  return prices;
}

}  // namespace cedar
