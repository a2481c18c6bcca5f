// The explicit, ordered list of codecs (codec_registry.h).
#include "algorithms/codecs/codec_registry.h"

#include <stdexcept>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/randomk_codec.h"
#include "algorithms/codecs/topk_codec.h"

namespace cedar {

const std::vector<CodecInfo>& codec_catalog() {
  using S = CodecSettings;
  // One codec per entry.
  static const std::vector<CodecInfo> catalog = {
      {"identity", "the d fp32 values (lossless): 4·d bytes",
       [](const S&) { return make_identity_compressor(); }},
      {"fp16", "the d values as IEEE halves: 2·d bytes",
       [](const S&) { return make_fp16_compressor(); }},
      {"qsgd",
       "QSGD: per bucket of bucket_size values a fp32 norm, then bits + 1 bits (sign and level) "
       "per value",
       [](const S& s) { return make_qsgd_compressor(s.bits, s.bucket_size, s.max_norm); }},
      {"sign", "signSGD: one bit per value, decoded to +1 / -1: ⌈d/8⌉ bytes",
       [](const S&) { return make_sign_compressor(); }},
      {"scaled_sign",
       "EF-signSGD: one bit per value and the mean magnitude ‖x‖₁/d as a fp32 scale: 4 + ⌈d/8⌉ "
       "bytes",
       [](const S&) { return make_scaled_sign_compressor(); }},
      {"natural",
       "natural compression: each value rounded stochastically to a power of two (unbiased), its "
       "sign and 8-bit exponent in 9 bits: ⌈9·d/8⌉ bytes",
       [](const S&) { return make_natural_compressor(); }},
      {"onebit",
       "1-bit SGD: one bit per value (x >= 0 or not) and the two sides' means as fp32: 8 + ⌈d/8⌉ "
       "bytes",
       [](const S&) { return make_onebit_compressor(); }},
      {"eightbit",
       "8-bit quantization (GRACE's): the max |x| as fp32, then per value its sign and the index "
       "of one of 127 fixed magnitudes in one byte: 4 + d bytes",
       [](const S&) { return make_eightbit_compressor(); }},
      {"topk", "the k = ⌈ratio·d⌉ largest |x_i| as (int32 index, fp32 value) pairs: 8·k bytes",
       [](const S& s) { return std::make_unique<TopKCompressor>(s.ratio); }},
      {"randomk",
       "k = ⌈ratio·d⌉ coordinates drawn uniformly as (int32 index, fp32 value) pairs: 8·k bytes "
       "(values_only: the values, 4·k bytes)",
       [](const S& s) { return std::make_unique<RandomKCompressor>(s.ratio, s.values_only); }},
  };
  return catalog;
}

std::vector<std::string> codec_names() {
  std::vector<std::string> names;
  for (const auto& c : codec_catalog()) names.push_back(c.name);
  return names;
}

const CodecInfo& find_codec(const std::string& name) {
  std::string known;
  for (const auto& c : codec_catalog()) {
    if (c.name == name) return c;
    known += (known.empty() ? "" : ", ") + c.name;
  }
  throw std::invalid_argument("unknown codec '" + name + "' (known: " + known + ")");
}

}  // namespace cedar
