#pragma once
// A compressor written in Python: a TorchScript module (`torch.jit.script(...).save(path)`) that
// Cedar loads with torch::jit::load and calls, with no rebuild (algorithms/script.cpp,
// docs/script_compressors.md).
//
// TorchScript rather than torch.export / AOTInductor: a scripted module keeps mutable attributes
// from call to call (a script's own memories, counters), runs one graph for every input size (one
// gradient tensor per call, each of its own size, and top-k's k = ceil(ratio d) follows the size),
// takes a torch.Generator argument, needs no compiler at export time, and its errors carry the
// Python file and line. An AOTInductor package is one compiled graph per shape (or a declared
// range), a pure function whose state must be passed in and out, and needs a C++ compiler to
// export. TorchScript is deprecated in favour of torch.export from torch 2.x; torch.jit.script
// still works (with a warning) in the torch 2.11 Cedar builds against.
//
// The interface a script implements (checked at load; an absent or mistyped piece is an error
// naming the file):
//   exchange: str             "allgather": every rank's compressed tensors are gathered, each
//                             rank's decoded, and the decodings averaged; the shapes compress
//                             returns must follow from the element count alone. "allreduce": the
//                             compressed tensors are summed over the ranks and decoded once, then
//                             divided by the rank count: linear codecs only.
//   defaults: Dict[str, float]   (optional) the parameters the experiment may set, with defaults.
//   configure(self, params: Dict[str, float]) -> None   (optional) called once with every
//                             parameter of `defaults`, the experiment's values replacing them.
//   compress(self, x: Tensor[, name: str][, gen: Generator]) -> List[Tensor]
//                             x: one gradient, 1-D fp32 (read-only: it may be the error-feedback
//                             memory itself); name: the parameter's name; gen: a seeded CPU
//                             generator (run seed, rank, step, bucket), drawn from in bucket order.
//                             The returned tensors are what is sent: their bytes are metered.
//   decompress(self, parts: List[Tensor], numel: int[, name: str]) -> Tensor
//                             numel decoded values (any floating type; fp32 is used).
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace cedar {

enum class ScriptExchange { kAllgather, kAllreduce };

// What an argument of compress or decompress after self is, told by its declared type.
enum class ScriptArg { kTensor, kName, kGenerator, kParts, kNumel };

class ScriptModule {
 public:
  // Loads and checks the module at `path`. Throws ConfigError naming the path (and what is
  // missing or mistyped) when the file is absent, is not a TorchScript module, or lacks a piece
  // of the interface.
  explicit ScriptModule(const std::string& path);
  ~ScriptModule();
  ScriptModule(const ScriptModule&) = delete;
  ScriptModule& operator=(const ScriptModule&) = delete;

  const std::string& path() const { return path_; }
  ScriptExchange exchange() const { return exchange_; }
  // The script's parameters with their defaults (its `defaults` attribute; empty without one).
  const std::map<std::string, double>& defaults() const { return defaults_; }

  // Calls configure() with `params` (when the script has one).
  void configure(const std::map<std::string, double>& params);
  std::vector<at::Tensor> compress(const at::Tensor& x, const std::string& name,
                                   at::Generator& gen);
  at::Tensor decompress(const std::vector<at::Tensor>& parts, int64_t numel,
                        const std::string& name);

  // The module's own state: its tensor attributes and Dict[str, Tensor] attributes, by
  // "<attribute>" and "<attribute>/<key>". load_state sets those found in `state` back.
  std::map<std::string, at::Tensor> state() const;
  void load_state(const std::map<std::string, at::Tensor>& state);

 private:
  std::string path_;
  std::unique_ptr<torch::jit::Module> module_;
  ScriptExchange exchange_ = ScriptExchange::kAllgather;
  std::map<std::string, double> defaults_;
  bool has_configure_ = false;
  std::vector<ScriptArg> compress_args_, decompress_args_;  // after self, in declared order
};

}  // namespace cedar
