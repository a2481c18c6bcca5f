#include "reports/gnuplot.h"

#include <cstdlib>
#include <stdexcept>

namespace cedar {

void render_gnuplot(const std::string& dir, const std::string& script) {
  const std::string cmd = "cd '" + dir + "' && gnuplot '" + script + "' 2>&1";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("gnuplot failed on " + dir + "/" + script +
                             " (is gnuplot-nox installed?)");
}

}  // namespace cedar
