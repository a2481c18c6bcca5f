// Writes the tiny inputs of tests/e2e/network_validation_report_test.sh:
//   validation_fixture_writer DIR
// gives DIR/100mbit.db and DIR/1gbit.db (suite "validation": dense and top-k at P = 2 on the
// virtual cluster's links, 2 hosts x 1 rank, 4 steps each) and the profiles calibrated there,
// DIR/vc-100mbit-2x1.yaml and DIR/vc-1gbit-2x1.yaml (tests/unit/link_validation_fixture.h). Dense
// allreduces 1,000,000 bytes per step (2 α terms and 1,000,000 bus bytes at P = 2), top-k
// allgathers 20,000 bytes per rank (1 and 20,000); each step's seconds are those printed below.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tests/unit/link_validation_fixture.h"

namespace {

using cedar::link_fixture::Op;
using cedar::link_fixture::Step;

// Steps of (compute, comm) seconds with the run's α terms and bus bytes.
std::vector<Step> steps(const std::vector<std::pair<double, double>>& seconds, int64_t latency,
                        int64_t bus) {
  std::vector<Step> out;
  for (const auto& [compute, comm] : seconds) out.push_back({compute, comm, latency, bus});
  return out;
}

void write_rate(const std::string& dir, const std::string& rate, double dense_comm,
                double topk_comm, double beta) {
  namespace f = cedar::link_fixture;
  cedar::ResultStore store(f::fresh_db(dir, rate + ".db"));
  f::RunSpec dense = f::run_spec("dense/np2", "dense", 2, f::links(2, 1, rate));
  // Step 0 is the warm-up; the other three vary around the rate's comm seconds.
  dense.steps =
      steps({{2.0, 5.0}, {0.10, dense_comm * 1.2}, {0.10, dense_comm * 0.8}, {0.10, dense_comm}}, 2,
            1'000'000);
  dense.ops = {Op{"allreduce", 1, 1'000'000, 1'000'000}};
  f::write_run(store, dense);
  f::RunSpec topk = f::run_spec("topk/np2", "topk", 2, f::links(2, 1, rate));
  topk.steps =
      steps({{2.0, 1.0}, {0.15, topk_comm}, {0.15, topk_comm}, {0.15, topk_comm}}, 1, 20'000);
  topk.ops = {Op{"allgather", 1, 20'000, 20'000}};
  f::write_run(store, topk);
  f::profile_file(dir, "vc-" + rate + "-2x1", 2, 1, rate, 2,
                  {{"allreduce", 2, {1e-4, beta}}, {"allgather", 2, {1e-4, beta}}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = std::string(argv[1]) + "/";
    write_rate(dir, "100mbit", 0.25, 0.005, 2e-7);
    write_rate(dir, "1gbit", 0.03, 0.001, 2e-8);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validation_fixture_writer: %s\n", e.what());
    return 1;
  }
}
