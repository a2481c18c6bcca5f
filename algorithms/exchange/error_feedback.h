#pragma once
// Error feedback ("memory") as a decorator around any compressor (Stich, Cordonnier, Jaggi 2018;
// Karimireddy et al. 2019): compress p = g + e, then keep e <- p - D(C(p)). A memory on the CPU is
// updated in place (the previous memory tensor changes).
#include <map>
#include <string>

#include "algorithms/codecs/compressor.h"

namespace cedar {

class ErrorFeedback {
 public:
  // Encodes g·scale + e for the tensor named `key` and updates that tensor's memory (scale 1:
  // g + e). g itself is left alone; the bits are those of g * scale, then + e, in fp32.
  at::Tensor compress(const std::string& key, const at::Tensor& g, Compressor& c,
                      at::Generator& gen, float scale = 1.0f);
  // The memory of `key` (undefined before the first compress).
  const at::Tensor& memory(const std::string& key) const;
  std::map<std::string, at::Tensor>& memories() { return memory_; }
  const std::map<std::string, at::Tensor>& memories_view() const { return memory_; }

 private:
  std::map<std::string, at::Tensor> memory_;
  at::Tensor scratch_;  // the decoding, for codecs that subtract it densely (subtract_decoded)
};

}  // namespace cedar
