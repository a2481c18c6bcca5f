#pragma once
// Compressors in the GRACE vocabulary: a Compressor only encodes and decodes; communication is the
// exchange's job (exchange/compressed_exchange.h) and error feedback a decorator
// (exchange/error_feedback.h).
// Payloads are uint8 tensors so that every encoding is exchanged and counted as the bytes it is.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cedar {

// A decoding that is one of two values per element, chosen by a bit (the sign codecs): the sign
// bits (bit_packing.h's layout with b = 1), the values that 1 and 0 bits decode to, and the
// payload's bytes on the CPU, which the bits point into.
struct SignDecoding {
  at::Tensor held;
  const uint8_t* bits = nullptr;
  float one = 0, zero = 0;
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Encodes a 1-D contiguous fp32 tensor into bytes. `gen` is the explicitly seeded generator of
  // stochastic compressors.
  virtual at::Tensor compress(const at::Tensor& x, at::Generator& gen) = 0;
  // The encoding of x − y, x and y of one shape on one device: the bytes of compress() of the
  // difference (x − y in their type, then as a 1-D contiguous fp32 tensor). The default computes
  // the difference (into `scratch` where x and y are contiguous fp32 CPU tensors: grown as needed,
  // the caller keeps it) and compresses it; a codec that encodes chunk by chunk may form the
  // difference chunk by chunk instead.
  virtual at::Tensor compress_difference(const at::Tensor& x, const at::Tensor& y,
                                         at::Generator& gen, at::Tensor& scratch);
  // Error feedback's p = e + g·scale and its encoding in one pass: e <- e + g·scale in place
  // (element by element the fp32 product, then the sum; scale 1 adds g itself), and returns the
  // bytes of compress(e) of the new e. e and g are contiguous fp32 CPU tensors of one shape.
  // Returns an undefined tensor, leaving e alone, where the codec has no such form (the default);
  // the caller then adds and compresses.
  virtual at::Tensor compress_accumulated(at::Tensor& e, const at::Tensor& g, float scale,
                                          at::Generator& gen) {
    return {};
  }
  // Decodes one payload back to a dense fp32 tensor of `numel` elements.
  virtual at::Tensor decompress(const at::Tensor& payload, int64_t numel) = 0;
  // Decodes one payload into caller-provided storage: `out` a contiguous fp32 tensor whose
  // numel() is the element count. Codecs that write straight into CPU storage override this; the
  // default, and every codec for an `out` on another device, copies decompress()'s result for the
  // payload on out's device (decoded there by the codec's device-generic form, generic_codecs.h).
  // Reusing `out` spares a fresh allocation (and its page faults) per call. Throws
  // std::invalid_argument when `out` is not contiguous fp32.
  virtual void decompress_into(const at::Tensor& payload, at::Tensor& out);
  // x <- x - decode(payload) in place, x a contiguous fp32 tensor of the payload's element
  // count: what error feedback keeps. The default decodes into `scratch` (grown as needed; the
  // caller keeps it between calls; not used for an x off the CPU) and subtracts; sparse codecs
  // subtract at their indices only. Either way the bits are those of x - decompress(payload).
  virtual void subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor& scratch);
  // sum <- (sum + decode(payload)) / divisor in place (divisor 1: no division), sum a contiguous
  // fp32 CPU tensor of the payload's element count: how an averaging exchange accumulates the
  // ranks' decodings. The default decodes into `scratch` (grown as needed; the caller keeps it)
  // and adds; a codec that decodes element by element may fuse the two (fp16). Either way the bits
  // are those of (sum + decompress(payload)) / divisor in IEEE fp32, in that order.
  virtual void add_decoded(const at::Tensor& payload, at::Tensor& sum, float divisor,
                           at::Tensor& scratch);
  // out <- the sign of the sum of the payloads' decodings (signSGD's majority vote; +0 on a tie),
  // out a contiguous fp32 CPU tensor of their element count: the bits of decoding each payload,
  // adding them in order and taking the sign. Returns false, leaving out alone, where the codec
  // has no such one-pass form; the caller then decodes and adds itself.
  virtual bool majority_into(const std::vector<at::Tensor>& payloads, at::Tensor& out) {
    return false;
  }
  // out <- ((sum of the payloads' decodings, in order) / their count) / then (each division
  // skipped when its divisor is 1), out a contiguous fp32 CPU tensor of their element count: the
  // bits of decompress_into the first, add_decoded of the others (the count as the last one's
  // divisor), then out / then; in one pass. Returns false, leaving out alone, where the codec has
  // no such form; the caller then decodes and adds itself.
  virtual bool average_into(const std::vector<at::Tensor>& payloads, at::Tensor& out, float then) {
    return false;
  }
  // The payload's SignDecoding for `numel` elements, checked as decompress checks a payload, for
  // callers that compute with the bits rather than a decoded tensor; nullopt where the codec's
  // decoding is not of that form.
  virtual std::optional<SignDecoding> sign_decoding(const at::Tensor& payload,
                                                    int64_t numel) const {
    return std::nullopt;
  }
  // The payload size for `numel` elements when it depends on numel alone (-1: data-dependent).
  virtual int64_t payload_bytes(int64_t numel) const { return -1; }
};

// Stores a tensor's raw bytes in a uint8 tensor and back (helpers for encoders).
at::Tensor as_bytes(const at::Tensor& t);
at::Tensor from_bytes(const at::Tensor& bytes, at::ScalarType type);

// Seeded generator for (run seed, rank, step, stream): reproducible from (config, seed, world
// size).
at::Generator make_generator(uint64_t seed, int rank, int64_t step, uint64_t stream = 0);

// Draws 64 random bits from a CPU generator (advancing it): the key of the counter-based uniforms
// (counter_rng.h) of one encoder call, so that they follow from the generator's seed.
uint64_t draw_key(at::Generator& gen);

// Whether x and y are contiguous fp32 CPU tensors of one shape (what compress_difference's fast
// paths work on).
bool cpu_fp32(const at::Tensor& x, const at::Tensor& y);

// Checks that `out` can receive `numel` decoded fp32 values in place (decompress_into): a
// contiguous CPU fp32 tensor, or with `any_device` a contiguous fp32 tensor anywhere.
void check_decode_target(const at::Tensor& out, const char* who, bool any_device = false);

// Checks a peer's payload (untrusted bytes) before anything is read from it or sized by its count:
// `numel` not negative and the payload 1-D uint8 of exactly `expected` bytes; else an error that
// names the codec (`who`), the sizes and what the bytes hold (`layout`, e.g. "two per element").
void check_payload_size(const at::Tensor& payload, const char* who, int64_t numel, int64_t expected,
                        const std::string& layout);

}  // namespace cedar
