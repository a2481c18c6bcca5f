#include "algorithms/codecs/script_compressor.h"

#include <ATen/ATen.h>

#include <sstream>
#include <stdexcept>
#include <string>

#include "config/params.h"

namespace cedar {

std::string ScriptCompressor::describe(const Layout& layout) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < layout.size(); ++i) {
    s << (i ? ", " : "") << c10::toString(layout[i].dtype) << "[";
    for (size_t d = 0; d < layout[i].shape.size(); ++d) s << (d ? ", " : "") << layout[i].shape[d];
    s << "]";
  }
  s << "]";
  return s.str();
}

at::Tensor ScriptCompressor::compress(const at::Tensor& x, at::Generator& gen) {
  const at::Tensor flat = x.detach().reshape({-1}).to(at::kFloat).contiguous();
  const std::vector<at::Tensor> out = module_->compress(flat, name_, gen);
  Layout layout;
  std::vector<at::Tensor> bytes;
  int64_t total = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined())
      throw ConfigError("script " + module_->path() + ": compress returned an undefined tensor " +
                        "(number " + std::to_string(i) + ") for " + name_);
    const at::Tensor t = out[i].detach().contiguous();
    const int64_t size = t.numel() * static_cast<int64_t>(t.element_size());
    layout.push_back({t.scalar_type(), t.sizes().vec(), size});
    // The elements' bytes as they are in memory: a reinterpreting view, copied once below.
    bytes.push_back(size ? t.reshape({-1}).view(at::kByte)
                         : at::empty({0}, t.options().dtype(at::kByte)));
    total += size;
  }
  const auto [it, first] = layouts_.emplace(flat.numel(), layout);
  if (!first && !(it->second == layout))
    throw ConfigError("script " + module_->path() + ": compress returned " + describe(layout) +
                      " for " + name_ + " (" + std::to_string(flat.numel()) +
                      " elements), but earlier " + describe(it->second) +
                      " for a tensor of that size: the shapes and dtypes of what is " +
                      "exchanged must follow from the element count alone");
  at::Tensor payload = at::empty({total}, flat.options().dtype(at::kByte));
  int64_t off = 0;
  for (const at::Tensor& b : bytes) {
    payload.narrow(0, off, b.numel()).copy_(b);
    off += b.numel();
  }
  return payload;
}

int64_t ScriptCompressor::payload_bytes(int64_t numel) const {
  const auto it = layouts_.find(numel);
  if (it == layouts_.end()) return -1;
  int64_t total = 0;
  for (const Part& p : it->second) total += p.bytes;
  return total;
}

std::vector<at::Tensor> ScriptCompressor::parts(const at::Tensor& payload, int64_t numel) const {
  const auto it = layouts_.find(numel);
  if (it == layouts_.end())
    throw std::invalid_argument("script " + module_->path() + ": no layout recorded for " +
                                std::to_string(numel) + " elements (decoded before encoded)");
  const int64_t expected = payload_bytes(numel);
  if (payload.scalar_type() != at::kByte || payload.numel() != expected)
    throw std::invalid_argument("script " + module_->path() + ": a payload of " +
                                std::to_string(payload.numel()) + " bytes for " +
                                std::to_string(numel) + " elements (its layout " +
                                describe(it->second) + " holds " + std::to_string(expected) + ")");
  std::vector<at::Tensor> out;
  int64_t off = 0;
  const at::Tensor flat = payload.reshape({-1});
  for (const Part& p : it->second) {
    at::Tensor bytes = flat.narrow(0, off, p.bytes).clone();
    off += p.bytes;
    out.push_back(p.bytes ? bytes.view(p.dtype).view(p.shape)
                          : at::empty(p.shape, bytes.options().dtype(p.dtype)));
  }
  return out;
}

at::Tensor ScriptCompressor::decode(const std::vector<at::Tensor>& parts, int64_t numel) {
  const at::Tensor out = module_->decompress(parts, numel, name_);
  if (!out.defined() || !at::isFloatingType(out.scalar_type()) || out.numel() != numel)
    throw ConfigError(
        "script " + module_->path() + ": decompress returned " +
        (out.defined() ? out.toString() + " of " + std::to_string(out.numel()) + " elements"
                       : std::string("an undefined tensor")) +
        " for " + name_ + ", expected " + std::to_string(numel) + " floating-point values");
  return out.detach().reshape({-1}).to(at::kFloat).contiguous();
}

at::Tensor ScriptCompressor::decompress(const at::Tensor& payload, int64_t numel) {
  return decode(parts(payload, numel), numel);
}

}  // namespace cedar
