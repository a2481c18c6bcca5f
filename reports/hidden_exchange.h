#pragma once
// How much of the communication backward hid, per run name (`cedar report --overlap`, and a
// section and figure of `cedar report --document` when a run recorded it): for each run with
// train.overlap, per step the share of its exchanges' time that ran while backward did
// (runner/train/exchange_overlap.h); per seed the median over its steps after the first (step 0
// warms up); per run name the mean of the seeds' medians and their range, and the medians of the
// exchange and hidden milliseconds per step. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

namespace cedar {

struct HiddenExchangeRow {
  std::string name;
  int64_t world_size = 0;
  std::vector<int64_t> seeds;
  std::vector<double> seed_shares;  // per seed (in `seeds` order): the median share of its steps
  double mean_share = 0, min_share = 0, max_share = 0;
  double exchange_ms = 0, hidden_ms = 0;  // the median over the seeds of their median per step
  int64_t steps = 0;                      // steps counted, over the seeds
};

// Runs of `suite` (every suite when empty) that recorded the overlap's exchange, one row per run
// name and world size, in the order of their first run.
std::vector<HiddenExchangeRow> load_hidden_exchange(const std::string& db_path,
                                                    const std::string& suite);
// "" when `rows` is empty.
std::string render_hidden_exchange_markdown(const std::vector<HiddenExchangeRow>& rows);
// hidden_exchange.gp and data/hidden_exchange.tsv in `dir` (the mean share per run name with its
// range over the seeds as bars); rendered to .svg and .png when `render`. Returns the SVG's path.
std::string write_hidden_exchange_plot(const std::vector<HiddenExchangeRow>& rows,
                                       const std::string& dir, bool render);

}  // namespace cedar
