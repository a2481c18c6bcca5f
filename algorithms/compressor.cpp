#include "algorithms/compressor.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace cedar {
namespace {

// MT19937 as at::mt19937 implements it (ATen/core/MT19937RNGEngine.h), written as loops over the
// whole state that the compiler vectorises; the scalar engine makes one call per number.
constexpr int kMtN = 624, kMtM = 397;

inline uint32_t mt_twist(uint32_t u, uint32_t v) {
  return (((u & 0x80000000u) | (v & 0x7fffffffu)) >> 1) ^ ((0u - (v & 1u)) & 0x9908b0dfu);
}

// at::mt19937::next_state.
void mt_regenerate(uint32_t* s) {
  int i = 0;
  for (; i < kMtN - kMtM; ++i) s[i] = s[i + kMtM] ^ mt_twist(s[i], s[i + 1]);
  for (; i < kMtN - 1; ++i) s[i] = s[i + kMtM - kMtN] ^ mt_twist(s[i], s[i + 1]);
  s[kMtN - 1] = s[kMtM - 1] ^ mt_twist(s[kMtN - 1], s[0]);
}

// The engine's tempering, then at::uniform_real_distribution<float>(0, 1): the low 24 bits of
// each number times 2^-24 (exact in fp32).
void mt_uniform(const uint32_t* s, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t y = s[i];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    out[i] = static_cast<float>(static_cast<int32_t>(y & 0xffffffu)) * (1.0f / 16777216.0f);
  }
}

}  // namespace

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
  uint64_t s = mix(mix(mix(mix(seed) ^ static_cast<uint64_t>(rank)) ^ static_cast<uint64_t>(step)) ^ stream);
  return at::make_generator<at::CPUGeneratorImpl>(s);
}

void uniform_floats(at::Generator& gen, float* out, int64_t n) {
  if (n <= 0) return;
  if (!gen.device().is_cpu())
    throw std::invalid_argument("uniform_floats: a CPU generator is required, got one for " +
                                gen.device().str());
  std::lock_guard<std::mutex> lock(gen.mutex());
  auto* impl = gen.get<at::CPUGeneratorImpl>();
  at::mt19937 engine = impl->engine();
  at::mt19937_data_pod d = engine.data();
  uint32_t* s = d.state_.data();
  // The engine returns state[next_] and moves on; after state[N - 1] (left_ == 1) it
  // regenerates the state first. So left_ - 1 numbers of the current state are still unread.
  int64_t take = std::min<int64_t>(n, d.left_ - 1);
  mt_uniform(s + d.next_, take, out);
  d.next_ += static_cast<uint32_t>(take);
  d.left_ -= static_cast<int>(take);
  for (int64_t done = take; done < n; done += take) {
    mt_regenerate(s);
    take = std::min<int64_t>(n - done, kMtN);
    mt_uniform(s, take, out + done);
    d.next_ = static_cast<uint32_t>(take);
    d.left_ = kMtN - static_cast<int>(take) + 1;
  }
  engine.set_data(d);
  impl->set_engine(engine);
}

}  // namespace cedar
