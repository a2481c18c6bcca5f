#pragma once
// What `cedar network calibrate` and `cedar network fit` share: fitting a profile to measured
// medians, refusing one without a bandwidth term, writing it, and printing what was measured and
// what was fitted.
#include <string>
#include <vector>

#include "comm/calibrated_profile.h"

namespace cedar {

// Fits `timings` (comm/calibrated_profile.h; with size bands at `band_edges` when given), writes
// the profile `name` to `out` and reads it back, then prints the measured medians and the fits.
// Throws std::runtime_error when the allreduce fit has no bandwidth term (beta = 0: the profile's
// default would be infinitely fast); warns on stderr for any other fit with a zero term.
void fit_and_write_profile(const std::vector<CollectiveTiming>& timings, const std::string& name,
                           const std::string& measured_on, const std::string& out,
                           const char* command, const std::vector<double>& band_edges = {});
// The same for a profile already fitted on `timings` (e.g. in segments).
void write_fitted_profile(const NetworkProfile& p, const std::vector<CollectiveTiming>& timings,
                          const std::string& out, const char* command);

// The profile's fits as a markdown table (a calibrated one; a fit's size bands in the rows after
// it), then its defaults.
void print_fits(const NetworkProfile& p);

}  // namespace cedar
