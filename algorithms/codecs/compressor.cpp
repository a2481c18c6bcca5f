#include "algorithms/codecs/compressor.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

namespace cedar {

at::Tensor as_bytes(const at::Tensor& t) {
  at::Tensor c = t.contiguous().cpu();
  int64_t n = c.numel() * static_cast<int64_t>(c.element_size());
  at::Tensor out = at::empty({n}, at::kByte);
  if (n) std::memcpy(out.data_ptr(), c.data_ptr(), n);
  return out;
}

at::Tensor from_bytes(const at::Tensor& bytes, at::ScalarType type) {
  int64_t esize = static_cast<int64_t>(c10::elementSize(type));
  at::Tensor c = bytes.contiguous();
  at::Tensor out = at::empty({c.numel() / esize}, at::TensorOptions().dtype(type));
  if (out.numel()) std::memcpy(out.data_ptr(), c.data_ptr(), out.numel() * esize);
  return out;
}

at::Generator make_generator(uint64_t seed, int rank, int64_t step, uint64_t stream) {
  // SplitMix64 over the four inputs: distinct, well-mixed seeds per (seed, rank, step, stream).
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t s =
      mix(mix(mix(mix(seed) ^ static_cast<uint64_t>(rank)) ^ static_cast<uint64_t>(step)) ^ stream);
  return at::make_generator<at::CPUGeneratorImpl>(s);
}

uint64_t draw_key(at::Generator& gen) {
  if (!gen.device().is_cpu())
    throw std::invalid_argument("draw_key: a CPU generator is required, got one for " +
                                gen.device().str());
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<at::CPUGeneratorImpl>()->random64();
}

void check_decode_target(const at::Tensor& out, const char* who, bool any_device) {
  if (!out.defined() || !(any_device || out.device().is_cpu()) || out.scalar_type() != at::kFloat ||
      !out.is_contiguous())
    throw std::invalid_argument(std::string(who) + ": decoding needs a contiguous " +
                                (any_device ? "" : "CPU ") + "fp32 output tensor, got " +
                                (out.defined() ? out.toString() + " on " + out.device().str()
                                               : std::string("an undefined tensor")));
}

void check_payload_size(const at::Tensor& payload, const char* who, int64_t numel, int64_t expected,
                        const std::string& layout) {
  if (numel < 0)
    throw std::invalid_argument(std::string(who) + ": negative element count " +
                                std::to_string(numel));
  if (payload.scalar_type() != at::kByte || payload.dim() != 1 || payload.numel() != expected)
    throw std::invalid_argument(
        std::string(who) + ": a payload of " + std::to_string(payload.numel()) + " bytes (" +
        c10::toString(payload.scalar_type()) + ", " + std::to_string(payload.dim()) + "-D) for " +
        std::to_string(numel) + " elements (expected " + std::to_string(expected) +
        " uint8 bytes: " + layout + ")");
}

at::Tensor Compressor::compress_difference(const at::Tensor& x, const at::Tensor& y,
                                           at::Generator& gen, at::Tensor& scratch) {
  if (!cpu_fp32(x, y)) return compress((x - y).reshape({-1}).to(at::kFloat).contiguous(), gen);
  if (!scratch.defined() || scratch.numel() < x.numel())
    scratch = at::empty({x.numel()}, at::kFloat);
  at::Tensor d = scratch.narrow(0, 0, x.numel());
  at::sub_out(d, x.reshape({-1}), y.reshape({-1}));
  return compress(d, gen);
}

bool cpu_fp32(const at::Tensor& x, const at::Tensor& y) {
  auto ok = [](const at::Tensor& t) {
    return t.is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
  };
  return ok(x) && ok(y) && x.sizes() == y.sizes();
}

void Compressor::decompress_into(const at::Tensor& payload, at::Tensor& out) {
  check_decode_target(out, "decompress_into", true);
  out.view({-1}).copy_(decompress(payload.to(out.device()), out.numel()));
}

void Compressor::subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor& scratch) {
  check_decode_target(x, "subtract_decoded", true);
  if (!x.is_cpu()) {  // decoded where x is
    x.view({-1}).sub_(decompress(payload.to(x.device()), x.numel()));
    return;
  }
  if (!scratch.defined() || scratch.numel() < x.numel())
    scratch = at::empty({x.numel()}, at::kFloat);
  at::Tensor decoded = scratch.narrow(0, 0, x.numel());
  decompress_into(payload, decoded);
  at::Tensor flat = x.view({-1});
  flat.sub_(decoded);
}

void Compressor::add_decoded(const at::Tensor& payload, at::Tensor& sum, float divisor,
                             at::Tensor& scratch) {
  check_decode_target(sum, "add_decoded", true);
  if (!sum.is_cpu()) throw std::invalid_argument("add_decoded: the sum must be on the CPU");
  if (!scratch.defined() || scratch.numel() < sum.numel())
    scratch = at::empty({sum.numel()}, at::kFloat);
  at::Tensor decoded = scratch.narrow(0, 0, sum.numel());
  decompress_into(payload, decoded);
  float* s = sum.data_ptr<float>();
  const float* d = decoded.data_ptr<float>();
  const int64_t n = sum.numel();
  if (divisor == 1.0f) {
    for (int64_t i = 0; i < n; ++i) s[i] += d[i];
  } else {
    for (int64_t i = 0; i < n; ++i) s[i] = (s[i] + d[i]) / divisor;
  }
}

}  // namespace cedar
