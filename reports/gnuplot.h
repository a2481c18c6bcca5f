// Running gnuplot on a script written into a plot directory (every figure Cedar draws).
#pragma once

#include <string>

namespace cedar {

// Runs `gnuplot SCRIPT` inside DIR (scripts name their data and outputs relative to it); throws
// std::runtime_error naming DIR/SCRIPT when gnuplot is missing or fails.
void render_gnuplot(const std::string& dir, const std::string& script);

}  // namespace cedar
