// CHOCO-SGD: decentralized SGD with compressed gossip.
// Papers: A. Koloskova, S. U. Stich, M. Jaggi, "Decentralized Stochastic Optimization and Gossip
// Algorithms with Compressed Communication", ICML 2019 (Algorithm 2); A. Koloskova, T. Lin,
// S. U. Stich, M. Jaggi, "Decentralized Deep Learning with Arbitrary Communication Compression",
// ICLR 2020 (the deep-learning experiments).
//
// Rule, on worker i with neighbours N_i, the mixing matrix W of the topology
// (algorithms/gossip/topology.h, uniform weights) and public copies x̂_j, all 0 at the start:
//   x_i^{t+½}  = x_i^t − η·d_i^t                 (the optimizer's local step: own gradient,
//                                                 weight decay and momentum, as in the authors'
//                                                 code; nothing is averaged)
//   q_i        = Q(x_i^{t+½} − x̂_i)              (per parameter tensor)
//   send q_i to every neighbour, receive q_j from each
//   x̂_j       ← x̂_j + q_j                        for j = i and every j ∈ N_i
//   x_i^{t+1}  = x_i^{t+½} + γ·Σ_j W_ij (x̂_j − x̂_i)
// Every rank applies the DECODED q_i to its own x̂_i, exactly as its neighbours do, so the copies
// of x̂_i agree everywhere. Memory: instead of one copy per neighbour, each worker keeps x̂_i and
// s_i = Σ_j W_ij x̂_j (updated with s_i ← s_i + Σ_j W_ij q_j): the same iterates (up to
// rounding) with two model copies whatever the degree, as Σ_j W_ij (x̂_j − x̂_i) = s_i − x̂_i
// since Σ_j W_ij = 1.
//
// Relation to D-PSGD (algorithms/dpsgd.cpp): with the identity compressor x̂_j = x_j^{t+½} after
// the exchange, so γ = 1 gives x_i^{t+1} = Σ_j W_ij (x_j^t − η·d_j^t): the local step comes before
// the mixing here and after it in D-PSGD (x_i^{t+1} = Σ_j W_ij x_j^t − η·d_i^t). The two are
// equal whenever the workers' update directions agree; tests/algorithms/choco_sgd_test.cpp checks
// both statements.
//
// Wire format: one message per neighbour per step (in after_step, since it needs the local
// step), the concatenation of the codec's payloads of every parameter tensor in model order:
// exactly degree × Σ_tensors codec_bytes(numel) bytes, one sendrecv per neighbour. The codec is
// any of the codec registry (algorithms/codecs/codec_registry.h: identity, fp16, qsgd, topk,
// randomk, ... with the bytes it states), per tensor of d values, read as follows:
//   sign      the paper's "sign" (sign + norm in the authors' code): the registry's scaled_sign,
//             (‖v‖₁/d)·sign(v), a fp32 scale and d bits: 4 + ⌈d/8⌉ bytes. (An unscaled sign is
//             no contraction, so the name means the scaled one here.)
//   topk, randomk   k = ⌈ratio·d⌉ coordinates as (int32 index, fp32 value) pairs: 8·k bytes;
//             random-k's drawn from the worker's own generator.
//   qsgd      QSGD with 2^bits − 1 levels per bucket of 512 values, decoded and divided by
//             τ = 1 + min(B/s², √B/s) (B = 512, s the levels), the rescaling that makes the
//             unbiased quantizer a contraction (ICML 2019, Sec. 3, "qsgd_s"): as qsgd's bytes.
// Randomness (randomk, qsgd): make_generator(seed, rank, step, stream 0), one per step.
//
// Buffers (batch-norm running statistics) stay local; the evaluated model averages them.
//
// Hyper-parameters:
//   topology (ring), torus_rows (0)   the graph, as D-PSGD's.
//   compressor (sign)   a codec of the registry (sign: the scaled sign, above).
//   gamma (0.4)         the consensus step γ. Default: the authors' released ResNet-20 /
//                       CIFAR-10 example on a ring of 8 with sign compression
//                       (epfml/ChocoSGD, dl_code/exps/finetune-resnet20-cifar10/example.sh,
//                       --consensus_stepsize 0.4), the setting of the ICLR 2020 experiments.
//   ratio (0.01)        topk / randomk: fraction of each tensor's coordinates sent.
//   bits (4)            qsgd: bits per level.
#include <ATen/ATen.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/codec_registry.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "algorithms/gossip/choco_update.h"
#include "algorithms/gossip/neighbour_exchange.h"
#include "algorithms/gossip/topology.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

constexpr int kChocoTag = 0xc0c;
constexpr int64_t kQsgdBucket = 512;

struct ChocoParams : GraphParams {
  std::string compressor = "sign";
  double gamma = 0.4;
  double ratio = 0.01;
  int64_t bits = 4;
  template <class V>
  void visit(V& v) {
    GraphParams::visit(v);
    v("compressor", compressor,
      "codec of the model differences, from the codec registry (sign: the scaled sign, the "
      "paper's)",
      one_of(codec_names()));
    v("gamma", gamma, "consensus step size (authors' ResNet-20 example: 0.4 with sign)",
      in_range(0, 1));
    v("ratio", ratio, "topk/randomk: fraction of each tensor's coordinates sent",
      keep_ratio_bound());
    v("bits", bits, "qsgd: bits per level (s = 2^bits - 1 levels, buckets of 512)", in_range(1, 8));
  }
};

std::unique_ptr<Compressor> make_codec(const ChocoParams& p) {
  CodecSettings s;
  s.ratio = p.ratio;
  s.bits = static_cast<int>(p.bits);
  s.bucket_size = kQsgdBucket;
  s.values_only = false;  // each worker draws its own coordinates
  return find_codec(p.compressor == "sign" ? "scaled_sign" : p.compressor).make(s);
}

// What decoded values are multiplied by: 1/τ for QSGD, 1 otherwise.
double decode_scale(const ChocoParams& p) {
  if (p.compressor != "qsgd") return 1.0;
  const double s = std::pow(2.0, static_cast<double>(p.bits)) - 1.0;
  const double b = static_cast<double>(kQsgdBucket);
  return 1.0 / (1.0 + std::min(b / (s * s), std::sqrt(b) / s));
}

class ChocoSgd final : public Algorithm {
 public:
  explicit ChocoSgd(const ChocoParams& p) : p_(p), codec_(make_codec(p)), scale_(decode_scale(p)) {}

  void setup(const std::vector<NamedTensor>& params, Communicator& comm) override {
    topology_ = make_topology(p_.topology, comm.size(), static_cast<int>(p_.torus_rows));
    x_hat_.clear();
    mixed_hat_.clear();
    for (const auto& p : params) {
      x_hat_[p.name] = at::zeros_like(p.tensor.detach());
      mixed_hat_[p.name] = at::zeros_like(p.tensor.detach());
    }
  }

  // The gradient stays local: the optimizer takes the local step.
  void reduce_gradients(GradBucket&, Communicator&, StepContext&) override {}

  void after_step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>&,
                  Communicator& comm, StepContext& ctx) override {
    if (topology_.degree() == 0) return;  // one rank: plain SGD
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step, 0);
    std::vector<at::Tensor> payloads;
    for (const auto& p : params) {
      const at::Tensor x = p.tensor.detach();
      // x − x̂ encoded where the parameters are (codecs/generic_codecs.h off the CPU), the
      // difference in this tensor's kept buffer or, by codecs that encode chunk by chunk, in
      // none (Compressor::compress_difference).
      payloads.push_back(
          codec_->compress_difference(x, x_hat_.at(p.name), gen, buffers_[p.name].diff));
    }
    const at::Tensor mine = at::cat(payloads).to(comm.device());
    const auto received = exchange_with_neighbours(topology_, mine, comm, kChocoTag);
    const double w = topology_.weight();
    const std::optional<MulAdd> rounding = libtorch_add_alpha();
    int64_t offset = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const at::Tensor x = params[i].tensor.detach();
      at::Tensor& hat = x_hat_.at(params[i].name);
      at::Tensor& mixed = mixed_hat_.at(params[i].name);
      const int64_t bytes = payloads[i].numel();
      if (rounding && reusable(x) && reusable(hat) && reusable(mixed)) {
        // The LibTorch operations below in one pass with their bits (gossip/choco_update.h),
        // from the sign bits themselves where the codec's decoding is a sign, otherwise from
        // decodings into kept buffers.
        std::vector<SignDecoding> signs;
        if (scale_ == 1.0)
          if (auto own = codec_->sign_decoding(mine.narrow(0, offset, bytes), x.numel())) {
            signs.push_back(*own);
            for (const auto& r : received)
              signs.push_back(codec_->sign_decoding(r.narrow(0, offset, bytes), x.numel()).value());
          }
        std::vector<Differences> q;
        for (const SignDecoding& d : signs) q.push_back({nullptr, d.bits, d.one, d.zero});
        if (signs.empty()) {
          Buffers& b = buffers(params[i].name, x);
          decode_into(mine.narrow(0, offset, bytes), b.q_self);
          q.push_back({b.q_self.data_ptr<float>()});
          b.q_others.resize(received.size());
          for (size_t j = 0; j < received.size(); ++j) {
            at::Tensor& other = b.q_others[j];
            if (!other.defined() || other.numel() != x.numel()) other = at::empty_like(b.q_self);
            decode_into(received[j].narrow(0, offset, bytes), other);
            q.push_back({other.data_ptr<float>()});
          }
        }
        choco_update(*rounding, q[0], q.data() + 1, static_cast<int>(q.size() - 1),
                     static_cast<float>(w), static_cast<float>(p_.gamma), hat.data_ptr<float>(),
                     mixed.data_ptr<float>(), x.data_ptr<float>(), x.numel());
        offset += bytes;
        continue;
      }
      const at::Tensor q_self = decode(mine.narrow(0, offset, bytes), x);
      at::Tensor q_sum = q_self.clone();
      for (const auto& r : received) q_sum.add_(decode(r.narrow(0, offset, bytes), x));
      hat.add_(q_self);
      mixed.add_(q_sum, w);
      x.add_(mixed - hat, p_.gamma);
      offset += bytes;
    }
  }

  // Keys "x_hat.<name>" and "mixed_hat.<name>".
  void save_state(AlgorithmState& out) const override {
    save_tensor_map(out, "x_hat.", x_hat_);
    save_tensor_map(out, "mixed_hat.", mixed_hat_);
  }
  void load_state(const AlgorithmState& in) override {
    load_tensor_map(in, "x_hat.", x_hat_);
    load_tensor_map(in, "mixed_hat.", mixed_hat_);
  }

 private:
  // A parameter's working buffers (1-D fp32 on the CPU), kept from step to step: the difference
  // to encode (compress_difference's scratch), and the decodings of this rank's and of each
  // neighbour's encoding.
  struct Buffers {
    at::Tensor diff, q_self;
    std::vector<at::Tensor> q_others;
  };
  static bool reusable(const at::Tensor& x) {
    return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous();
  }
  Buffers& buffers(const std::string& name, const at::Tensor& x) {
    Buffers& b = buffers_[name];
    if (!b.q_self.defined() || b.q_self.numel() != x.numel()) {
      b.q_self = at::empty({x.numel()}, at::kFloat);
      b.q_others.clear();
    }
    return b;
  }
  // decode() into `out`, a 1-D fp32 CPU tensor.
  void decode_into(const at::Tensor& payload, at::Tensor& out) {
    codec_->decompress_into(payload.contiguous(), out);
    if (scale_ != 1.0) out.mul_(scale_);
  }

  // One tensor's decoded q, shaped and placed like `like`.
  at::Tensor decode(const at::Tensor& payload, const at::Tensor& like) {
    at::Tensor q = codec_->decompress(payload.contiguous(), like.numel());
    if (scale_ != 1.0) q.mul_(scale_);
    return q.view(like.sizes()).to(like.device(), like.scalar_type());
  }

  ChocoParams p_;
  std::unique_ptr<Compressor> codec_;
  double scale_;
  Topology topology_;
  std::map<std::string, at::Tensor> x_hat_;      // x̂_i per parameter
  std::map<std::string, at::Tensor> mixed_hat_;  // Σ_j W_ij x̂_j per parameter
  std::map<std::string, Buffers> buffers_;       // scratch, not state
};

}  // namespace

AlgorithmInfo choco_sgd_algorithm() {
  AlgorithmInfo info = algorithm_info<ChocoSgd, ChocoParams>(
      "choco-sgd",
      "CHOCO-SGD: local step, then gossip of compressed model differences with the graph "
      "neighbours (public copies x_hat, consensus step gamma); no global collective",
      "Koloskova, Stich, Jaggi, ICML 2019; Koloskova, Lin, Stich, Jaggi, ICLR 2020");
  info.device_independent = true;
  info.gossip = true;
  info.acts_after_step = true;
  info.codec = "scaled_sign";  // compressor: sign, the default
  // Exact gossip (the identity codec) with the full consensus step on a graph where every rank
  // is every other's neighbour (2 ranks on a ring) averages the local steps, which are linear in
  // the gradient and the momentum: dense SGD up to the order of the sums.
  info.lossless = {{"{compressor: identity, gamma: 1}", 1e-4}};
  return info;
}

}  // namespace cedar
