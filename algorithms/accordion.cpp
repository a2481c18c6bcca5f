// Accordion: S. Agarwal, H. Wang, K. Lee, S. Venkataraman, D. Papailiopoulos, "Adaptive Gradient
// Communication via Critical Learning Regime Identification", MLSys 2021 (arXiv:2010.16248),
// Algorithm 1, following the authors' code (uw-mad-dash/Accordion: auto_scale.py, main.py).
//
// Two configured instances of an existing compressor, PowerSGD or top-k: ℓ_low (low compression:
// rank_low / ratio_low) and ℓ_high (high compression: rank_high / ratio_high). Each layer (gradient
// tensor) is compressed by one of them, chosen per layer:
//   Δ_l(e)   = Σ over the steps of epoch e of this rank's gradient of layer l (before compression)
//   at the end of every epoch e with e % interval == 0, per layer:
//     first detection (no Δ_old)                      -> critical
//     ||Δ_old|| = 0                                   -> critical
//     | ||Δ_old|| - ||Δ_new|| | / ||Δ_old|| >= eta     -> critical   (Δ_new = Δ_l(e),
//     otherwise                                       -> not critical  Δ_old = Δ_l(e - interval))
//   and when the learning rate of epoch e+1 is below that of epoch e (a decay), every layer is
//   critical; the regime holds until the next detection. Critical layers use ℓ_low, the others
//   ℓ_high; before the first detection (epoch 0) every layer is critical (the reference starts at
//   its low-compression k). The change is taken in absolute value, as the authors' code
//   (auto_scale.py) does, so a rise of the norm counts like a fall. The norms are rank 0's,
//   broadcast to every rank (8 bytes per layer of the bucket at each detection), so that every
//   rank decides alike. ctx.stats["accordion.critical"]: the fraction of the layers seen so far
//   that are in a critical regime this step.
//
// On a switch a layer's error-feedback memory moves to the other instance (the reference keeps
// the memory and builds a new reducer: --zero-memory is off by default). PowerSGD's Q of that
// layer is dropped from the instance it leaves, so an instance receiving a layer always draws a
// fresh seeded Q for it (the new reducer's fresh Q). Top-k's memory is kept in gradient units at
// the lr of the step that left it; it is rescaled on the move so that the receiving instance's own
// lr rescaling leaves it at the paper's η-scaled value.
// Bytes per step: those of each instance on its layers (powersgd.cpp, topk.cpp), plus the
// detection's broadcast.
//
// Hyper-parameters (defaults: the paper's CIFAR-10 settings):
//   compressor (powersgd)    powersgd | topk
//   rank_low (2), rank_high (1)       PowerSGD rank in critical regimes / otherwise (paper: 2 / 1)
//   ratio_low (0.99), ratio_high (0.1) top-k fraction sent in critical regimes / otherwise
//                                     (reference auto_scale_topk.py: 0.99 / 0.1)
//   eta (0.5)                threshold on the relative change of the accumulated gradient norm
//   interval (10)            detection every `interval` epochs (reference switch_freq: 10 for
//                            CIFAR, 5 for the language models)
#include <ATen/ATen.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"

namespace cedar {

namespace {

struct AccordionParams {
  std::string compressor = "powersgd";
  int64_t rank_low = 2;
  int64_t rank_high = 1;
  double ratio_low = 0.99;
  double ratio_high = 0.1;
  double eta = 0.5;
  int64_t interval = 10;
  template <class V>
  void visit(V& v) {
    v("compressor", compressor, "the compressor whose level adapts: powersgd or topk",
      one_of({"powersgd", "topk"}));
    v("rank_low", rank_low, "PowerSGD rank in critical regimes (low compression; paper: 2)",
      at_least(1));
    v("rank_high", rank_high, "PowerSGD rank outside critical regimes (high compression; paper: 1)",
      at_least(1));
    v("ratio_low", ratio_low, "top-k fraction sent in critical regimes (reference: 0.99)",
      keep_ratio_bound());
    v("ratio_high", ratio_high, "top-k fraction sent outside critical regimes (reference: 0.1)",
      keep_ratio_bound());
    v("eta", eta, "critical when |old - new| / old >= eta for the accumulated gradient norms",
      greater_than(0));
    v("interval", interval, "epochs between detections (reference switch_freq: 10 on CIFAR)",
      at_least(1));
  }
};

// What Accordion keeps per layer.
struct Layer {
  at::Tensor accum;      // Δ of the current detection epoch (this rank's gradients)
  double old_norm = -1;  // ||Δ_old|| of the previous detection (-1: none yet)
  bool critical = true;  // regime until the next detection
  int holder = -1;       // the instance holding its state (0: ℓ_low, 1: ℓ_high, -1: none)
  int64_t decided = -1;  // the epoch at whose start it was last decided
};

class Accordion final : public Algorithm {
 public:
  explicit Accordion(const AccordionParams& p) : p_(p) {
    const bool psgd = p.compressor == "powersgd";
    const AlgorithmInfo& info = find_algorithm(p.compressor);
    const Source src{"accordion." + p.compressor, {}};
    const auto level = [&](double value) {
      YAML::Emitter yaml;
      yaml << YAML::Flow << YAML::BeginMap << YAML::Key << (psgd ? "rank" : "ratio") << YAML::Value;
      if (psgd)
        yaml << static_cast<int64_t>(value);
      else
        yaml << YAML::Precision(17) << value;
      yaml << YAML::EndMap;
      return info.make(YAML::Load(yaml.c_str()), src, nullptr);
    };
    levels_[0] = psgd ? level(double(p.rank_low)) : level(p.ratio_low);
    levels_[1] = psgd ? level(double(p.rank_high)) : level(p.ratio_high);
    memory_prefix_ = psgd ? "error." : "memory.";
  }

  void setup(const std::vector<NamedTensor>& params, Communicator& comm) override {
    for (auto& level : levels_) level->setup(params, comm);
  }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    if (ctx.epoch != epoch_) start_epoch(ctx);
    decide(bucket, comm);
    if (ctx.epoch % p_.interval == 0)
      for (const auto& e : bucket.entries) {
        Layer& l = layers_[e.name];
        if (!l.accum.defined()) l.accum = at::zeros_like(e.grad);
        l.accum.add_(e.grad);
      }
    GradBucket parts[2];
    std::vector<std::string> moves[2];  // names moving to instance i
    for (auto& part : parts) {
      part.index = bucket.index;
      part.flat = bucket.flat;  // for its options: both compressors exchange entry by entry
    }
    for (const auto& e : bucket.entries) {
      Layer& l = layers_[e.name];
      const int to = l.critical ? 0 : 1;
      if (l.holder >= 0 && l.holder != to) moves[to].push_back(e.name);
      l.holder = to;
      parts[to].entries.push_back(e);
    }
    for (int to = 0; to < 2; ++to) hand_over(moves[to], 1 - to, to, bucket.index, ctx.lr);
    for (int i = 0; i < 2; ++i)
      if (!parts[i].entries.empty()) levels_[i]->reduce_gradients(parts[i], comm, ctx);
    int64_t critical = 0;
    for (const auto& kv : layers_) critical += kv.second.critical ? 1 : 0;
    ctx.stats["accordion.critical"] = double(critical) / double(layers_.size());
  }

  void save_state(AlgorithmState& out) const override {
    for (int i = 0; i < 2; ++i) {
      AlgorithmState level;
      levels_[i]->save_state(level);
      for (auto& kv : level) out[level_prefix(i) + kv.first] = kv.second;
    }
    for (const auto& kv : layers_) {
      const Layer& l = kv.second;
      save_numbers(out, "layer." + kv.first,
                   {l.old_norm, l.critical ? 1.0 : 0.0, double(l.holder), double(l.decided)});
      if (l.accum.defined()) out["accum." + kv.first] = l.accum.detach().clone();
    }
    save_numbers(out, "epoch",
                 {double(epoch_), epoch_lr_, detect_ ? 1.0 : 0.0, decay_ ? 1.0 : 0.0});
  }

  void load_state(const AlgorithmState& in) override {
    for (int i = 0; i < 2; ++i) {
      AlgorithmState level;
      const std::string prefix = level_prefix(i);
      for (const auto& kv : in)
        if (kv.first.compare(0, prefix.size(), prefix) == 0)
          level[kv.first.substr(prefix.size())] = kv.second;
      levels_[i]->load_state(level);
    }
    layers_.clear();
    for (const auto& kv : in) {
      if (kv.first.compare(0, 6, "layer.") != 0) continue;
      const std::string name = kv.first.substr(6);
      const std::vector<double> v = load_numbers(in, kv.first);
      Layer& l = layers_[name];
      l.old_norm = v.at(0);
      l.critical = v.at(1) != 0;
      l.holder = static_cast<int>(v.at(2));
      l.decided = static_cast<int64_t>(v.at(3));
      auto accum = in.find("accum." + name);
      if (accum != in.end()) l.accum = accum->second.clone();
    }
    const std::vector<double> e = load_numbers(in, "epoch");
    epoch_ = static_cast<int64_t>(e.at(0));
    epoch_lr_ = e.at(1);
    detect_ = e.at(2) != 0;
    decay_ = e.at(3) != 0;
  }

 private:
  static std::string level_prefix(int i) { return i == 0 ? "low." : "high."; }

  // The first step of a new epoch: the epoch that ended was a detection epoch, or its lr was
  // above this epoch's (a decay).
  void start_epoch(const StepContext& ctx) {
    detect_ = epoch_ >= 0 && epoch_ % p_.interval == 0;
    decay_ = epoch_ >= 0 && ctx.lr < epoch_lr_;
    epoch_ = ctx.epoch;
    epoch_lr_ = ctx.lr;
  }

  // The regime of the bucket's layers for this epoch, decided once per epoch at its first step.
  void decide(const GradBucket& bucket, Communicator& comm) {
    if (epoch_ == 0) return;
    std::vector<Layer*> due;
    for (const auto& e : bucket.entries) {
      Layer& l = layers_[e.name];
      if (l.decided != epoch_) due.push_back(&l);
      l.decided = epoch_;
    }
    if (due.empty() || !(detect_ || decay_)) return;
    if (detect_) {
      at::Tensor norms = at::zeros({int64_t(due.size())}, at::kDouble);
      for (size_t i = 0; i < due.size(); ++i)
        if (due[i]->accum.defined())
          norms[int64_t(i)] = due[i]->accum.to(at::kDouble).norm().item<double>();
      at::Tensor on_device = norms.to(comm.device());
      comm.broadcast(on_device, 0);
      norms = on_device.cpu();
      for (size_t i = 0; i < due.size(); ++i) {
        Layer& l = *due[i];
        const double now = norms[int64_t(i)].item<double>();
        l.critical =
            l.old_norm < 0 || l.old_norm == 0 || std::fabs(l.old_norm - now) / l.old_norm >= p_.eta;
        l.old_norm = now;
        l.accum = at::Tensor();
      }
    }
    if (decay_)
      for (Layer* l : due) l->critical = true;
  }

  // Moves the error memories of `names` from instance `from` to instance `to`, and drops their
  // PowerSGD Q from `from`: a layer's Q lives only in the instance holding it, so the receiver
  // draws a fresh one.
  void hand_over(const std::vector<std::string>& names, int from, int to, int64_t bucket,
                 double lr) {
    if (names.empty()) return;
    AlgorithmState src, dst;
    levels_[from]->save_state(src);
    levels_[to]->save_state(dst);
    double scale = 1;
    if (p_.compressor == "topk") {
      const auto from_lr = load_number_map(src, "last_lr"), to_lr = load_number_map(dst, "last_lr");
      const auto f = from_lr.find(bucket), t = to_lr.find(bucket);
      const double target = t != to_lr.end() ? t->second : lr;
      if (f != from_lr.end() && f->second > 0 && target > 0) scale = f->second / target;
    }
    for (const auto& name : names) {
      const std::string key = memory_prefix_ + name;
      dst.erase(key);
      src.erase("query." + name);
      auto it = src.find(key);
      if (it == src.end()) continue;
      dst[key] = scale == 1 ? it->second : it->second * scale;
      src.erase(it);
    }
    levels_[from]->load_state(src);
    levels_[to]->load_state(dst);
  }

  AccordionParams p_;
  std::unique_ptr<Algorithm> levels_[2];  // ℓ_low (critical regimes), ℓ_high
  std::string memory_prefix_;             // the instances' state key of a layer's memory
  std::map<std::string, Layer> layers_;
  int64_t epoch_ = -1;   // the epoch of the last step seen
  double epoch_lr_ = 0;  // the lr at its first step
  bool detect_ = false;  // the epoch before it was a detection epoch
  bool decay_ = false;   // its lr is below the previous epoch's
};

}  // namespace

AlgorithmInfo accordion_algorithm() {
  AlgorithmInfo info = algorithm_info<Accordion, AccordionParams>(
      "accordion",
      "Accordion: per layer, PowerSGD or top-k at a low compression in critical regimes "
      "(a large relative change of the accumulated gradient norm, or an lr decay) and a high "
      "compression otherwise",
      "Agarwal, Wang, Lee, Venkataraman, Papailiopoulos, MLSys 2021");
  info.device_independent = true;
  info.lossless = {{"{compressor: topk, ratio_low: 1, ratio_high: 1}", 0}};
  return info;
}

}  // namespace cedar
