#pragma once
// The codecs by name, one line each in codec_registry.cpp, in the order they are listed: what
// CHOCO-SGD's `compressor:` key accepts, what bench/compressors_bench.cpp times (codec/<name>),
// what the tests that hold for every codec run over, and what an algorithm's `codec` trait
// (algorithms/algorithm.h) names. Adding a codec: its file here with its factory, a line in the
// registry.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/codecs/compressor.h"

namespace cedar {

// The parameters a codec may take; each codec reads those it has and ignores the others. The
// defaults are the papers' usual settings.
struct CodecSettings {
  double ratio = 0.01;        // topk, randomk: fraction of the coordinates kept, k = ⌈ratio·d⌉
  int bits = 4;               // qsgd: bits per level, s = 2^bits − 1 levels
  int64_t bucket_size = 512;  // qsgd: values sharing one norm
  bool max_norm = false;      // qsgd: each bucket scaled by its max-norm instead of its 2-norm
  bool values_only = false;   // randomk: the values alone (every rank draws the same indices)
};

struct CodecInfo {
  std::string name;
  std::string description;  // what one encoding of d values holds
  std::function<std::unique_ptr<Compressor>(const CodecSettings&)> make;
};

// Every codec, in registration order.
const std::vector<CodecInfo>& codec_catalog();
// The codecs' names, in registration order.
std::vector<std::string> codec_names();
// Throws std::invalid_argument naming the unknown codec and the known ones.
const CodecInfo& find_codec(const std::string& name);

}  // namespace cedar
