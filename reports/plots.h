#pragma once
// Plots of a suite from the results database, rendered with gnuplot: test accuracy against
// wall-clock, against bytes sent and against epoch, and the training loss; one curve per run name,
// seeds as their mean with a min-max band. The data files (.tsv) and scripts (.gp) stay next to
// the SVG and PNG images so a user can restyle them. Output is deterministic for a database.
// No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

struct PlotOutput {
  std::vector<std::string> scripts;  // the .gp files written
  std::vector<std::string> images;   // the .svg / .png files gnuplot produced
};

// Writes data and scripts into `dir`; renders them when `render` (needs gnuplot on PATH).
PlotOutput write_plots(const std::string& db_path, const std::string& suite, const std::string& dir,
                       bool render = true);

}  // namespace cedar
