#include "runner/train/step_agreement.h"

#include <torch/torch.h>

namespace cedar {
namespace {

// The report as one row of doubles (counts stay exact below 2^53), in this column order.
enum Column : int64_t { kLoss, kCorrect, kCount, kPayload, kStop, kNonfinite, kColumns };

at::Tensor pack(const StepReport& r) {
  return torch::tensor({r.loss_sum, r.correct, r.count, double(r.payload_bytes),
                        double(r.stop_signal), double(r.nonfinite_param)},
                       torch::kDouble);
}

}  // namespace

StepAgreement agree_on_step(Communicator& control, const StepReport& mine) {
  auto all = control.allgather(pack(mine)).view({-1, kColumns});
  auto sums = all.sum(0);
  auto s = sums.accessor<double, 1>();
  auto per_rank = all.accessor<double, 2>();
  StepAgreement a;
  a.loss_sum = s[kLoss];
  a.correct = s[kCorrect];
  a.count = s[kCount];
  a.payload_bytes = static_cast<int64_t>(s[kPayload]);
  for (int64_t r = 0; r < all.size(0) && !a.stop_signal; ++r)
    a.stop_signal = static_cast<int>(per_rank[r][kStop]);
  for (int64_t r = 0; r < all.size(0) && a.nonfinite_rank < 0; ++r) {
    if (per_rank[r][kNonfinite] == 0) continue;
    a.nonfinite_rank = static_cast<int>(r);
    a.nonfinite_param = static_cast<int64_t>(per_rank[r][kNonfinite]);
  }
  return a;
}

bool any_rank_overflowed(Communicator& control, bool mine) {
  auto flag = torch::full({1}, mine ? 1.0 : 0.0, torch::kDouble);
  control.allreduce_sum(flag);
  return flag.item<double>() > 0;
}

}  // namespace cedar
