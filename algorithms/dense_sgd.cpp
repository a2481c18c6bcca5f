// Dense synchronous SGD (S-SGD / bulk-synchronous data parallelism): the baseline every other
// algorithm is compared with. Each step the workers' gradients are summed with one allreduce per
// bucket and divided by the number of workers.
#include <ATen/ATen.h>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct DenseParams {
  template <class V>
  void visit(V&) {}
};

class DenseSgd final : public Algorithm {
 public:
  explicit DenseSgd(const DenseParams&) {}
  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext&) override {
    comm.allreduce_sum(bucket.flat);
    if (comm.size() > 1) bucket.flat.div_(comm.size());
  }
};

}  // namespace

AlgorithmInfo dense_sgd_algorithm() {
  AlgorithmInfo info = algorithm_info<DenseSgd, DenseParams>(
      "dense", "dense synchronous SGD: allreduce-average of every gradient (the baseline)",
      "bulk-synchronous data-parallel SGD");
  info.device_independent = true;
  info.elementwise_exchange = true;
  info.lossless = {{"{}", 0}};  // the baseline itself
  return info;
}

}  // namespace cedar
