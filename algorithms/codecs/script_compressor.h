#pragma once
// A Python-written compressor (codecs/script_module.h) as a Compressor, so that error feedback
// (exchange/error_feedback.h) decorates it as any other.
//
// Payload: the bytes of the tensors the script's compress returns, in order, each one's elements
// contiguous in its own dtype (native byte order), nothing else: numel·element_size bytes per
// tensor, exactly what is sent and metered. The layout (each tensor's dtype and shape) is recorded
// for an element count at its first compress and every later compress of that count must return
// the same one: the ranks of an exchange run the same script on tensors of the same sizes, so a
// layout that follows from the size alone is every rank's, and a peer's payload is split by it.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/script_module.h"

namespace cedar {

class ScriptCompressor final : public Compressor {
 public:
  explicit ScriptCompressor(std::shared_ptr<ScriptModule> module) : module_(std::move(module)) {}

  ScriptModule& module() { return *module_; }
  const ScriptModule& module() const { return *module_; }
  // The parameter name the script's next compress and decompress calls receive.
  void set_name(const std::string& name) { name_ = name; }

  // x as a 1-D fp32 tensor (a view where it is one already) through the script's compress; its
  // tensors' bytes. Throws ConfigError naming the script when the layout differs from the one
  // recorded for this element count, or a returned tensor is undefined.
  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override;
  // The script's decompress of the payload's tensors: numel fp32 values.
  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override;
  // The recorded layout's bytes; -1 before the first compress of `numel` elements.
  int64_t payload_bytes(int64_t numel) const override;

  // The payload's tensors with the dtypes and shapes of the layout for `numel` (copies, so that
  // each starts aligned). Throws std::invalid_argument when no layout is recorded for numel or
  // the payload's size is not the layout's.
  std::vector<at::Tensor> parts(const at::Tensor& payload, int64_t numel) const;
  // The script's decompress of `parts` as a contiguous 1-D fp32 tensor of numel elements; throws
  // ConfigError naming the script when it returns another count or a non-floating tensor.
  at::Tensor decode(const std::vector<at::Tensor>& parts, int64_t numel);

 private:
  struct Part {
    at::ScalarType dtype;
    std::vector<int64_t> shape;
    int64_t bytes;
    bool operator==(const Part& o) const { return dtype == o.dtype && shape == o.shape; }
  };
  using Layout = std::vector<Part>;
  static std::string describe(const Layout& layout);

  std::shared_ptr<ScriptModule> module_;
  std::string name_;
  std::map<int64_t, Layout> layouts_;  // by element count
};

}  // namespace cedar
