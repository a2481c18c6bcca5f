#include "runner/ps/recorder.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "comm/communicator.h"
#include "runner/train/evaluator.h"
#include "runner/train/log.h"

namespace cedar {

PsRecorder::PsRecorder(const PsRunInputs& in, const PsLayout& layout, int64_t updates_per_epoch)
    : in_(in),
      layout_(layout),
      updates_per_epoch_(updates_per_epoch),
      stats_(layout.workers),
      buffers_(*in.model, layout.workers),
      recorder_(in.store, in.run_id, fp32_parameter_bytes(*in.model), layout.workers) {
  recorder_.start_clock();
}

void PsRecorder::receive_stats(int worker) {
  at::Tensor t = at::empty({kStatsWords + buffers_.words()}, at::kDouble);
  in_.control.recv(t, layout_.rank_of_worker(worker), kStatsTag);
  const double* v = t.data_ptr<double>();
  stats_[static_cast<size_t>(worker)] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
  buffers_.receive(worker, v + kStatsWords);
}

bool PsRecorder::losses_finite(const PsUpdate& u, std::string& why) const {
  for (int w : u.workers) {
    const double loss = stats_[static_cast<size_t>(w)].loss_sum;
    if (std::isfinite(loss)) continue;
    why = "update " + std::to_string(u.version) + ": the training loss of worker " +
          std::to_string(w) + " is " + std::to_string(loss);
    return false;
  }
  return true;
}

void PsRecorder::record(const PsUpdate& u) {
  StepMeasures m;
  double compute = 0, comm = 0, latency = 0;
  int64_t payload = 0, bus = 0;
  for (int w : u.workers) {
    const WorkerStepStats& s = stats_[static_cast<size_t>(w)];
    m.loss_sum += s.loss_sum;
    m.correct += s.correct;
    m.count += s.count;
    compute += s.compute_seconds;
    comm += s.comm_seconds;
    payload += static_cast<int64_t>(s.payload_bytes);
    bus += static_cast<int64_t>(s.bus_bytes);
    latency += s.latency_steps;
  }
  const double n = static_cast<double>(std::max<size_t>(1, u.workers.size()));
  m.step = u.version - 1;
  m.epoch = (u.version - 1) / updates_per_epoch_;
  m.compute_seconds = compute / n;
  m.comm_seconds = comm / n;
  m.payload_bytes = static_cast<int64_t>(std::llround(double(payload) / n));
  m.bus_bytes = static_cast<int64_t>(std::llround(double(bus) / n));
  m.payload_bytes_all = payload;
  m.latency_steps = static_cast<int64_t>(latency / n);
  m.counted_payload_bytes = payload;  // every worker's pushes
  m.counted_bus_bytes = bus;
  m.learning_rate = u.lr;
  m.stats.push_back({"staleness", static_cast<double>(u.staleness)});
  m.stats.push_back({"gradients", static_cast<double>(u.workers.size())});
  if (u.workers.size() == 1) m.stats.push_back({"worker", u.workers[0]});
  if (in_.ps.upload == "lag") m.stats.push_back({"uploads", double(u.uploads)});
  recorder_.record_step(m);
}

double PsRecorder::evaluate_now(int64_t version) {
  buffers_.average_into(*in_.model);
  LocalCommunicator alone;
  const EvalResult r =
      evaluate(*in_.model, in_.data.test, in_.data.norm,
               std::max<int64_t>(in_.cfg.train.batch_size, 256), in_.device, alone);
  if (!std::isfinite(r.loss)) return r.loss;  // the run diverged: no evaluation row
  const double epoch = double(version) / double(updates_per_epoch_);
  recorder_.record_eval(r, version, epoch);
  const EpochSums& es = recorder_.epoch_sums();
  if (!in_.quiet)
    log_info(
        strprintf("ps: %lld updates (epoch %.2f) | train loss %.4f acc %.2f%% | test acc "
                  "%.2f%% (server-held model) | payload %.2f MB per worker",
                  static_cast<long long>(version), epoch, es.loss_sum / std::max(1.0, es.count),
                  100.0 * es.correct / std::max(1.0, es.count), 100.0 * r.accuracy,
                  recorder_.counted_payload_bytes() / 1e6 / layout_.workers));
  recorder_.start_epoch();
  return r.loss;
}

}  // namespace cedar
