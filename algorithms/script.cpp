// Compressors written in Python and run with no rebuild: `algorithm: {name: script, path: FILE,
// ...}` loads a TorchScript module (torch.jit.script(...).save(FILE)) whose compress / decompress
// Cedar calls for every gradient tensor (codecs/script_module.h has the interface;
// docs/script_compressors.md the guide; examples/ scripted top-k and QSGD).
//
// Why TorchScript (torch.jit.script + torch::jit::load) and not torch.export / AOTInductor: a
// compressor has state (its own memories, counters: a scripted module keeps its attributes from
// call to call) and sees another size at every call (one gradient tensor each; top-k's k follows
// the size: TorchScript runs one graph for all, an AOTInductor package is compiled per shape or
// range), takes a seeded Generator, and a script needs no C++ compiler to export and reports
// errors with its Python line. TorchScript is deprecated in torch 2.x but works in the 2.11 Cedar
// builds against.
//
// Rule, per gradient tensor g of one bucket on every worker (memory e, starts at 0):
//   p  = g + e (error_feedback on; else p = g)
//   parts = compress(p)                         the script's tensors: what is sent
//   e' = p − decompress(parts)                  (error_feedback on)
// then, as the script's `exchange` attribute declares:
//   allgather: every rank's parts gathered, each decoded, the decodings averaged;
//   allreduce: the parts summed over the ranks, decoded once, divided by the rank count.
// The memory is rescaled by η_old/η_new when the learning rate changes, as top-k's is
// (rescale_memory_for_lr in exchange/sparse_exchange.h).
//
// Wire format (exchange/script_exchange.h): the bytes of the script's tensors, each one's elements
// in its dtype, nothing else; per bucket one allgather of this rank's bytes of every tensor, or
// one allreduce per dtype of the tensors. The step's payload is Σ numel·element_size over the
// tensors the script returned.
//
// Randomness: per bucket, make_generator(seed, rank, step, stream = bucket.index), handed to the
// script's compress (when it takes a Generator) for each tensor in bucket order: reproducible
// from (config, seed, world size) and the script.
//
// Hyper-parameters:
//   path            the module file (required); relative to the working directory
//   error_feedback  Cedar's error feedback around the script                   (default false)
//   any other key   a number for the script: the keys of its `defaults` attribute (Dict[str,
//                   float]), passed with the defaults of the keys not given to its configure()
// The resolved parameters a run records add module_sha256, the SHA-256 of the module file.
// The script's own tensor and Dict[str, Tensor] attributes are checkpointed with the memory.
#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/script_compressor.h"
#include "algorithms/exchange/script_exchange.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"
#include "platform/checksum.h"

namespace cedar {
namespace {

constexpr const char* kStatePrefix = "script/";

struct ScriptParams {
  std::string path;
  bool error_feedback = false;

  template <class V>
  void visit(V& v) {
    v("path", path,
      "the compressor's TorchScript module, saved by torch.jit.script(...).save "
      "(docs/script_compressors.md); required");
    v("error_feedback", error_feedback,
      "add what the script's compression lost to the next gradient (a memory per tensor, "
      "rescaled when the learning rate changes, as top-k's)");
  }
};

class Script final : public Algorithm {
 public:
  Script(const ScriptParams& p, std::shared_ptr<ScriptModule> module)
      : params_(p), codec_(std::move(module)) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    if (params_.error_feedback) memory_.rescale(bucket, ctx.lr);
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step, bucket.index);
    ExchangeResult r = exchange_scripted(bucket, comm, codec_,
                                         params_.error_feedback ? &memory_.memory() : nullptr, gen);
    ctx.stats["script.payload_bytes"] += static_cast<double>(r.payload_bytes);
  }

  void save_state(AlgorithmState& out) const override {
    memory_.save(out);
    for (auto& [key, tensor] : codec_.module().state()) out[kStatePrefix + key] = tensor;
  }
  void load_state(const AlgorithmState& in) override {
    memory_.load(in);
    std::map<std::string, at::Tensor> own;
    const std::string prefix = kStatePrefix;
    for (const auto& [key, tensor] : in)
      if (key.compare(0, prefix.size(), prefix) == 0) own[key.substr(prefix.size())] = tensor;
    codec_.module().load_state(own);
  }

 private:
  ScriptParams params_;
  ScriptCompressor codec_;
  LrScaledMemory memory_;
};

std::unique_ptr<Algorithm> make_script(const YAML::Node& node, const Source& src,
                                       std::string* resolved) {
  ScriptParams p;
  YamlLoader loader(node, src, "algorithm", {"name"});
  p.visit(loader);
  const YAML::Node path_node = node.IsMap() ? node["path"] : YAML::Node();
  if (p.path.empty())
    throw ConfigError(where(src, "algorithm", node) +
                      ": algorithm.path: the script algorithm needs the path of a TorchScript "
                      "module (torch.jit.script(...).save(path))");
  std::shared_ptr<ScriptModule> module;
  try {
    module = std::make_shared<ScriptModule>(p.path);
  } catch (const ConfigError& e) {
    throw ConfigError(where(src, "algorithm.path", path_node) + ": algorithm.path: " + e.what());
  }
  // The script's parameters: its defaults, each replaced by the experiment's number if given.
  std::map<std::string, double> values = module->defaults();
  for (auto& [key, value] : values) loader(key.c_str(), value, "");
  loader.finish();
  try {
    module->configure(values);
  } catch (const ConfigError& e) {
    throw ConfigError(where(src, "algorithm", node) + ": algorithm: " + e.what());
  }
  if (resolved) {
    YAML::Emitter out;
    out << YAML::BeginMap;
    YamlDumper d(out);
    p.visit(d);
    for (auto& [key, value] : values) d(key.c_str(), value, "");
    // What ran, not only where it was: the module file's SHA-256 (the run's algorithm_params).
    out << YAML::Key << "module_sha256" << YAML::Value << digest_file(p.path).sha256;
    out << YAML::EndMap;
    *resolved = out.c_str();
  }
  return std::make_unique<Script>(p, std::move(module));
}

}  // namespace

AlgorithmInfo script_algorithm() {
  AlgorithmInfo info{"script",
                     "a compressor written in Python: a TorchScript module's compress and "
                     "decompress, its tensors allgathered (each rank's decoded, then averaged) or "
                     "allreduced (summed, then decoded), as the script declares",
                     "the researcher's own (examples/script_topk.py, examples/script_qsgd.py)",
                     nullptr, nullptr};
  info.params = [] {
    std::vector<ParamDoc> docs = describe_params<ScriptParams>();
    docs.push_back({"(other keys)", "",
                    "numbers for the script: the keys of its `defaults` attribute (Dict[str, "
                    "float]), passed with the defaults of those not given to its configure()",
                    ""});
    return docs;
  };
  info.make = make_script;
  info.runs_from_defaults = false;  // no module without its path
  info.not_lossless_because = "the script's compression is the researcher's own";
  return info;
}

}  // namespace cedar
