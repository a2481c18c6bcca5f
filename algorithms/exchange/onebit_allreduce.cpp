#include "algorithms/exchange/onebit_allreduce.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/generic_codecs.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

constexpr int kOnebitTag = 0x1ad;

// √(Σ x² / L) in fp64, rounded to fp32 (0 for an empty x).
float onebit_scale(const at::Tensor& x) {
  if (x.numel() == 0) return 0.0f;
  const double sum_sq = x.to(at::kDouble).square().sum().item<double>();
  return static_cast<float>(std::sqrt(sum_sq / static_cast<double>(x.numel())));
}

// The sign bits of x (1-D fp32): packed_bytes(L, 1) bytes, 1 for x ≥ 0. The CPU kernel on the
// CPU, the device-generic form elsewhere (the same bits).
at::Tensor onebit_signs(const at::Tensor& x) {
  if (!x.is_cpu()) return generic::pack_signs(x);
  at::Tensor out = at::empty({packed_bytes(x.numel(), 1)}, at::TensorOptions().dtype(at::kByte));
  pack_signs(x.data_ptr<float>(), x.numel(), out.data_ptr<uint8_t>());
  return out;
}

// The first L bits of `bytes` decoded to +scale (bit 1) and −scale (bit 0).
at::Tensor onebit_decode(const at::Tensor& bytes, int64_t count, float scale) {
  const at::Tensor b = bytes.narrow(0, 0, packed_bytes(count, 1));
  return b.is_cpu() ? unpack_signs(b.contiguous(), count, scale, -scale)
                    : generic::unpack_signs(b, count, scale, -scale);
}

// x ← C(x)'s residual: x − s·sign(x), with the bits and the scale of C(x) returned.
struct OnebitCompressed {
  at::Tensor bits;
  float scale = 0;
};
OnebitCompressed onebit_compress(at::Tensor& x) {
  OnebitCompressed c{onebit_signs(x), onebit_scale(x)};
  x.sub_(onebit_decode(c.bits, x.numel(), c.scale));
  return c;
}

// The K fp32 scales at the start of a message, on the host.
std::vector<float> onebit_message_scales(const at::Tensor& message, size_t k) {
  const at::Tensor s =
      generic::reinterpret(message.narrow(0, 0, static_cast<int64_t>(4 * k)), at::kFloat).cpu();
  return std::vector<float>(s.data_ptr<float>(), s.data_ptr<float>() + k);
}

// A message: the scales, then per tensor the c_k/8 bytes of `chunk_bytes(k)`.
template <class ChunkBytes>
at::Tensor onebit_message(const std::vector<float>& scales, size_t k, at::Device device,
                          ChunkBytes chunk_bytes) {
  std::vector<at::Tensor> parts{at::tensor(scales, at::kFloat).view(at::kByte).to(device)};
  for (size_t i = 0; i < k; ++i) parts.push_back(chunk_bytes(i));
  return at::cat(parts);
}

}  // namespace

int64_t onebit_chunk_elements(int64_t d, int n) {
  if (n < 1) throw std::invalid_argument("onebit_chunk_elements: " + std::to_string(n) + " ranks");
  return 8 * ((d + 8 * n - 1) / (8 * n));
}

OnebitChunk onebit_chunk(int64_t d, int n, int j) {
  const int64_t c = onebit_chunk_elements(d, n);
  const int64_t begin = std::min(d, c * j);
  return {begin, std::min(d, begin + c) - begin};
}

int64_t onebit_message_bytes(const std::vector<int64_t>& numels, int n) {
  int64_t bytes = 4 * static_cast<int64_t>(numels.size());
  for (int64_t d : numels) bytes += onebit_chunk_elements(d, n) / 8;
  return bytes;
}

void onebit_allreduce(const std::vector<at::Tensor>& x, const std::vector<OnebitErrors*>& errors,
                      Communicator& comm) {
  if (x.size() != errors.size())
    throw std::invalid_argument("onebit_allreduce: " + std::to_string(x.size()) + " tensors and " +
                                std::to_string(errors.size()) + " error memories");
  const int n = comm.size(), rank = comm.rank();
  const size_t k = x.size();
  std::vector<int64_t> numels, chunk_bytes;
  for (const auto& t : x) {
    if (t.scalar_type() != at::kFloat || !t.is_contiguous())
      throw std::invalid_argument("onebit_allreduce: tensors must be contiguous fp32");
    numels.push_back(t.numel());
    chunk_bytes.push_back(onebit_chunk_elements(t.numel(), n) / 8);
  }
  const int64_t size = onebit_message_bytes(numels, n);
  const at::Device device = comm.device();
  const auto bytes = at::TensorOptions().dtype(at::kByte).device(device);

  // Worker stage: p = x + e, s = ‖p‖/√d, e ← p − s·sign(p); the bits padded to n whole chunks.
  std::vector<float> worker_scales(k);
  std::vector<at::Tensor> worker_bits(k);
  for (size_t i = 0; i < k; ++i) {
    at::Tensor& e = errors[i]->worker;
    if (!e.defined()) e = at::zeros({numels[i]}, x[i].options());
    e.add_(x[i].reshape({-1}));
    const OnebitCompressed c = onebit_compress(e);
    worker_scales[i] = c.scale;
    worker_bits[i] = at::zeros({chunk_bytes[i] * n}, bytes);
    worker_bits[i].narrow(0, 0, c.bits.numel()).copy_(c.bits);
  }
  auto for_chunk = [&](int j) {
    return onebit_message(worker_scales, k, device, [&](size_t i) {
      return worker_bits[i].narrow(0, chunk_bytes[i] * j, chunk_bytes[i]);
    });
  };

  // Phase 1: every rank's scales and the bits of this rank's chunk, from every rank.
  std::vector<at::Tensor> received(static_cast<size_t>(n));
  received[static_cast<size_t>(rank)] = for_chunk(rank);
  for (int r = 1; r < n; ++r) {
    const int dest = (rank + r) % n, source = (rank - r + n) % n;
    at::Tensor in = at::empty({size}, bytes);
    comm.sendrecv(for_chunk(dest), dest, in, source, kOnebitTag);
    received[static_cast<size_t>(source)] = in;
  }

  // Server stage on this rank's chunk: y = Σ_i s_i·sign_i / n, q = y + ē, ē ← q − σ·sign(q).
  std::vector<std::vector<float>> scales;
  for (const auto& m : received) scales.push_back(onebit_message_scales(m, k));
  std::vector<float> server_scales(k);
  std::vector<at::Tensor> server_bits(k);
  int64_t offset = static_cast<int64_t>(4 * k);
  for (size_t i = 0; i < k; ++i) {
    const OnebitChunk chunk = onebit_chunk(numels[i], n, rank);
    at::Tensor y = at::zeros({chunk.count}, x[i].options());
    for (int src = 0; src < n; ++src)
      y.add_(onebit_decode(received[static_cast<size_t>(src)].narrow(0, offset, chunk_bytes[i]),
                           chunk.count, scales[static_cast<size_t>(src)][i]));
    if (n > 1) y.div_(n);
    at::Tensor& e = errors[i]->server;
    if (!e.defined()) e = at::zeros({chunk.count}, x[i].options());
    e.add_(y);
    const OnebitCompressed c = onebit_compress(e);
    server_scales[i] = c.scale;
    server_bits[i] = at::zeros({chunk_bytes[i]}, bytes);
    server_bits[i].narrow(0, 0, c.bits.numel()).copy_(c.bits);
    offset += chunk_bytes[i];
  }
  const at::Tensor mine =
      onebit_message(server_scales, k, device, [&](size_t i) { return server_bits[i]; });

  // Phase 2: every chunk's σ·sign(q) from its server.
  const at::Tensor all = n > 1 ? comm.allgather(mine) : mine;
  for (int j = 0; j < n; ++j) {
    const at::Tensor m = all.narrow(0, size * j, size);
    const std::vector<float> sigma = onebit_message_scales(m, k);
    int64_t pos = static_cast<int64_t>(4 * k);
    for (size_t i = 0; i < k; ++i) {
      const OnebitChunk chunk = onebit_chunk(numels[i], n, j);
      x[i].view({-1})
          .narrow(0, chunk.begin, chunk.count)
          .copy_(onebit_decode(m.narrow(0, pos, chunk_bytes[i]), chunk.count, sigma[i]));
      pos += chunk_bytes[i];
    }
  }
}

}  // namespace cedar
