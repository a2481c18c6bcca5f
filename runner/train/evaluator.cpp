#include "runner/train/evaluator.h"

#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "comm/average.h"
#include "comm/communicator.h"
#include "runner/train/mixed_precision.h"

namespace cedar {

bool evaluation_due(int64_t done, int64_t steps_per_epoch, int64_t evals_per_epoch) {
  if (steps_per_epoch <= 0 || done <= 0) return false;
  const int64_t n = std::min(evals_per_epoch, steps_per_epoch);  // keeps done * n in range
  // True when `done` is the first step count with done * n >= k * steps_per_epoch for some k.
  return done * n / steps_per_epoch > (done - 1) * n / steps_per_epoch;
}

EvalRow eval_row(const EvalResult& r, int64_t step, double epoch, double wall_seconds,
                 int64_t cum_payload_bytes, int64_t cum_bus_bytes, double train_loss_sum,
                 double train_correct, double train_count) {
  EvalRow row;
  row.step = step;
  row.epoch = epoch;
  row.wall_seconds = wall_seconds;
  row.cum_payload_bytes = cum_payload_bytes;
  row.cum_bus_bytes = cum_bus_bytes;
  row.test_loss = r.loss;
  row.test_accuracy = r.accuracy;
  row.train_loss = train_loss_sum / std::max(1.0, train_count);
  row.train_accuracy = train_correct / std::max(1.0, train_count);
  row.consensus_distance = r.consensus_distance;
  return row;
}

EvalResult evaluate(Model& model, const ImageSet& test, const Normalization& norm,
                    int64_t batch_size, const torch::Device& device, Communicator& comm,
                    std::optional<at::ScalarType> amp) {
  torch::NoGradGuard no_grad;
  model.eval();
  const int64_t c = test.channels, h = test.height, w = test.width;
  auto mean = torch::tensor(norm.mean).view({1, c, 1, 1});
  auto inv_std = 1.0 / torch::tensor(norm.std).view({1, c, 1, 1});
  std::vector<int64_t> mine;
  for (int64_t i = comm.rank(); i < test.count; i += comm.size()) mine.push_back(i);
  double loss_sum = 0, correct = 0;
  auto pixels = torch::empty({batch_size, c, h, w}, torch::kUInt8);
  auto labels = torch::empty({batch_size}, torch::kLong);
  for (size_t start = 0; start < mine.size(); start += batch_size) {
    int64_t n = std::min<int64_t>(batch_size, static_cast<int64_t>(mine.size() - start));
    uint8_t* dst = pixels.data_ptr<uint8_t>();
    int64_t* lab = labels.data_ptr<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      test.copy_image(mine[start + j], dst + j * test.image_bytes());
      lab[j] = test.labels[mine[start + j]];
    }
    auto x = ((pixels.narrow(0, 0, n).to(torch::kFloat) / 255.0 - mean) * inv_std).to(device);
    auto y = labels.narrow(0, 0, n).to(device);
    AutocastGuard autocast(device.type(), amp);
    auto out = model.forward(x);
    loss_sum += torch::nn::functional::cross_entropy(
                    out, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += out.argmax(1).eq(y).sum().item<double>();
  }
  // Three host doubles: summed over the control channel on the CPU, where they already are.
  auto totals =
      torch::tensor({loss_sum, correct, static_cast<double>(mine.size())}, torch::kDouble);
  comm.allreduce_sum(totals);
  EvalResult r;
  r.count = static_cast<int64_t>(totals[2].item<double>());
  r.loss = totals[0].item<double>() / std::max<int64_t>(1, r.count);
  r.accuracy = totals[1].item<double>() / std::max<int64_t>(1, r.count);
  model.train();
  return r;
}

EvalResult evaluate_averaged_model(Model& model, const ImageSet& test, const Normalization& norm,
                                   int64_t batch_size, const torch::Device& device,
                                   Communicator& control, std::optional<at::ScalarType> amp) {
  return evaluate_averaged(model, control, [&] {
    return evaluate(model, test, norm, batch_size, device, control, amp);
  });
}

EvalResult evaluate_averaged(Model& model, Communicator& control,
                             const std::function<EvalResult()>& evaluate) {
  if (control.size() == 1) return evaluate();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> live;  // parameters and floating-point buffers, model order
  for (auto& p : model.parameters()) live.push_back(p.detach());
  const size_t parameters = live.size();
  for (auto& b : model.buffers())
    if (b.is_floating_point()) live.push_back(b);  // num_batches_tracked stays as it is
  std::vector<torch::Tensor> kept;
  kept.reserve(live.size());
  for (const auto& t : live) kept.push_back(t.clone());
  // Every rank now holds the same average. The model is on the run's device and `control` on
  // the CPU: average_in_place moves each group through the control channel's device and back,
  // since an evaluation is rare next to steps and its traffic stays out of the algorithm's meter.
  average_in_place(live, control);
  auto restore = [&] {
    for (size_t i = 0; i < live.size(); ++i) live[i].copy_(kept[i]);
  };
  EvalResult r;
  try {
    auto distance = torch::zeros({1}, torch::kDouble);
    for (size_t i = 0; i < parameters; ++i)
      distance += (kept[i].to(torch::kDouble) - live[i].to(torch::kDouble)).pow(2).sum().cpu();
    control.allreduce_sum(distance);  // one host double, on the CPU channel
    const double consensus = distance.item<double>() / control.size();
    r = evaluate();
    r.consensus_distance = consensus;
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return r;
}

}  // namespace cedar
