// The codec interface (algorithms/codecs/compressor.h): draw_key advances its generator and follows
// the generator's seed; every codec of the registry (codecs/codec_registry.h) keeps the
// interface's bit-for-bit promises (subtract_decoded, add_decoded, compress_difference,
// decompress_into into caller storage, also through non-temporal stores, aligned or not); and the
// codecs' own one-pass forms (QSGD's average, the sign majority, sign decodings).
#include "algorithms/codecs/compressor.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codec_registry.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/randomk_codec.h"
#include "algorithms/codecs/simd.h"
#include "algorithms/codecs/topk_codec.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

struct NamedCodec {
  std::string name;
  std::unique_ptr<Compressor> codec;
};

// Every registered codec with `settings`.
std::vector<NamedCodec> every_codec(const CodecSettings& settings = {}) {
  std::vector<NamedCodec> out;
  for (const auto& c : codec_catalog()) out.push_back({c.name, c.make(settings)});
  return out;
}

TEST(Compressor, RegistryNamesEachCodecOnceAndRefusesOthersNamingThem) {
  std::set<std::string> seen;
  for (const auto& c : codec_catalog()) {
    EXPECT_TRUE(seen.insert(c.name).second) << c.name << " registered twice";
    EXPECT_EQ(&find_codec(c.name), &c);
    EXPECT_FALSE(c.description.empty()) << c.name;
  }
  EXPECT_EQ(codec_names().size(), codec_catalog().size());
  try {
    find_codec("zip");
    ADD_FAILURE() << "an unknown codec was found";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown codec 'zip'"), std::string::npos) << what;
    for (const auto& name : codec_names()) EXPECT_NE(what.find(name), std::string::npos) << what;
  }
}

// The settings reach the codecs that take them: the encoding of 1000 values follows the ratio
// (topk, randomk, and randomk's values-only form) and the bits and bucket size (qsgd), by the
// formats: 8 bytes per kept pair, 4 per value alone, a fp32 norm per bucket and bits + 1 bits per
// value.
TEST(Compressor, RegistrySettingsReachTheCodecs) {
  const at::Tensor x = at::randn({1000}, make_generator(1, 0, 0));
  auto bytes = [&](const std::string& name, const CodecSettings& s) {
    at::Generator gen = make_generator(2, 0, 0);
    return find_codec(name).make(s)->compress(x, gen).numel();
  };
  CodecSettings s;
  s.ratio = 0.1;
  s.bits = 2;
  s.bucket_size = 100;
  EXPECT_EQ(bytes("topk", s), 8 * 100);
  EXPECT_EQ(bytes("randomk", s), 8 * 100);
  EXPECT_EQ(bytes("qsgd", s), 4 * 10 + 3 * 1000 / 8);
  s.values_only = true;
  EXPECT_EQ(bytes("randomk", s), 4 * 100);
  EXPECT_EQ(bytes("topk", CodecSettings{}), 8 * 10);  // the default ratio, 1%
}

TEST(Compressor, DrawKeyAdvancesTheGeneratorAndFollowsItsSeed) {
  at::Generator a = make_generator(3, 0, 0), b = make_generator(3, 0, 0);
  at::Generator c = make_generator(4, 0, 0);
  const uint64_t k1 = draw_key(a), k2 = draw_key(a);
  EXPECT_NE(k1, k2);
  EXPECT_EQ(k1, draw_key(b));
  EXPECT_EQ(k2, draw_key(b));
  EXPECT_NE(k1, draw_key(c));
}

// subtract_decoded(payload, x) leaves in x, bit for bit, x - decompress(payload): the default path
// of the dense codecs (through the caller's scratch, reused and grown) and the sparse codecs'
// own, which touch only their indices; x holds signed zeros too.
TEST(Compressor, SubtractDecodedLeavesXMinusTheDecoding) {
  CodecSettings settings;
  settings.ratio = 0.02;
  std::vector<NamedCodec> codecs = every_codec(settings);
  codecs.push_back({"random-k values", std::make_unique<RandomKCompressor>(0.02, true)});
  TopKCompressor topk(0.01);
  at::Tensor scratch;
  for (const auto& [name, codec] : codecs)
    for (int64_t n : {int64_t{5}, int64_t{40000}}) {
      at::Tensor x = at::randn({n}, make_generator(n, 4, 0));
      x.narrow(0, 0, 2).fill_(-0.0f);  // -0 - 0 stays -0; a dense x - D keeps it so
      at::Generator gen = make_generator(2, 0, 0);
      at::Tensor payload = codec->compress(x, gen);
      at::Tensor expected = x - codec->decompress(payload, n);
      codec->subtract_decoded(payload, x, scratch);
      EXPECT_TRUE(same_bits(x, expected)) << name << ", " << n << " elements";
    }
  EXPECT_GE(scratch.numel(), 40000);  // the dense codecs decoded into it
  // A peer's sparse payload with descending indices is refused.
  at::Tensor x = at::zeros({10});
  at::Tensor bad = encode_sparse(at::tensor({int64_t{5}, int64_t{2}}), at::tensor({1.0f, 2.0f}));
  EXPECT_THROW(topk.subtract_decoded(bad, x, scratch), std::invalid_argument);
}

// add_decoded(payload, sum, divisor) leaves in sum, bit for bit, (sum + decompress(payload)) /
// divisor, or sum + decompress(payload) for divisor 1: the default path (through the caller's
// scratch) and the fused ones of fp16 and the scaled sign; sum holds signed zeros too.
TEST(Compressor, AddDecodedLeavesTheSumPlusTheDecodingDivided) {
  at::Tensor scratch;
  for (const auto& [name, codec] : every_codec())
    for (int64_t n : {int64_t{5}, int64_t{40003}})
      for (float divisor : {1.0f, 3.0f}) {
        at::Tensor x = at::randn({n}, make_generator(n, 5, 0));
        at::Tensor sum = at::randn({n}, make_generator(n, 6, 0));
        sum.narrow(0, 0, 2).fill_(-0.0f);
        at::Generator gen = make_generator(2, 0, 0);
        at::Tensor payload = codec->compress(x, gen);
        at::Tensor expected = sum + codec->decompress(payload, n);
        if (divisor != 1.0f) expected = expected / divisor;
        codec->add_decoded(payload, sum, divisor, scratch);
        EXPECT_TRUE(same_bits(sum, expected))
            << name << ", " << n << " elements, divisor " << divisor;
      }
}

// QSGD's average_into gives, bit for bit, what the exchange's default path gives: decompress_into
// of the first payload, add_decoded of the others (the count as the last one's divisor), then /
// then; for bucket sizes that are and are not multiples of 8, over several blocks and a partial
// bucket.
TEST(Compressor, QsgdAverageIntoIsTheDecodingsAddedInOrder) {
  for (int64_t bucket : {int64_t{512}, int64_t{1000}, int64_t{7}, int64_t{1} << 40})
    for (int64_t n : {int64_t{1}, int64_t{3 * kChunk + 1003}})
      for (int streams = 1; streams <= 3; ++streams)
        for (float then : {1.0f, 0.3f}) {
          auto qsgd = make_qsgd_compressor(4, bucket, false);
          std::vector<at::Tensor> payloads;
          for (int r = 0; r < streams; ++r) {
            at::Generator gen = make_generator(9, r, n);
            payloads.push_back(qsgd->compress(at::randn({n}, gen), gen));
          }
          at::Tensor want = at::empty({n}), scratch;
          qsgd->decompress_into(payloads[0], want);
          for (int r = 1; r < streams; ++r)
            qsgd->add_decoded(payloads[static_cast<size_t>(r)], want,
                              r + 1 == streams ? static_cast<float>(streams) : 1.0f, scratch);
          if (then != 1.0f) want = want / then;
          at::Tensor out = at::full({n}, 7.0f);
          ASSERT_TRUE(qsgd->average_into(payloads, out, then));
          EXPECT_TRUE(same_bits(out, want)) << "bucket " << bucket << ", " << n << " elements, "
                                            << streams << " payloads, then " << then;
        }
  auto qsgd = make_qsgd_compressor(4, 512, false);
  at::Tensor out = at::zeros({100});
  EXPECT_THROW(qsgd->average_into({at::zeros({10}, at::kByte)}, out, 1.0f), std::invalid_argument);
}

// The sign codec's majority_into gives, bit for bit, the sign of the payload-ordered sum of the
// decodings (+1, -1, and +0 on the ties of an even count) for 1 to 6 payloads over several of its
// blocks and a partial last byte; the other codecs decline, and a payload of the wrong size is
// refused.
TEST(Compressor, SignMajorityIntoIsTheSignOfTheSumOfTheDecodings) {
  auto sign = make_sign_compressor();
  const int64_t n = 3 * 4096 + 1003;
  for (int streams = 1; streams <= 6; ++streams) {
    std::vector<at::Tensor> payloads;
    at::Tensor sum = at::zeros({n});
    for (int r = 0; r < streams; ++r) {
      at::Generator gen = make_generator(7, r, 0);
      at::Tensor x = at::randn({n}, gen);
      payloads.push_back(sign->compress(x, gen));
      sum.add_(sign->decompress(payloads.back(), n));
    }
    at::Tensor out = at::full({n}, 7.0f);
    ASSERT_TRUE(sign->majority_into(payloads, out)) << streams << " payloads";
    EXPECT_TRUE(same_bits(out, sum.sign())) << streams << " payloads";
    if (streams % 2 == 0) {
      EXPECT_GT(out.eq(0).sum().item<int64_t>(), 0) << "ties give 0";
    }
  }
  at::Tensor out = at::zeros({n});
  EXPECT_THROW(sign->majority_into({at::zeros({10}, at::kByte)}, out), std::invalid_argument);
  at::Generator gen = make_generator(1, 0, 0);
  auto scaled_sign = make_scaled_sign_compressor();
  auto qsgd = make_qsgd_compressor(4, 512, false);
  for (Compressor* other : {scaled_sign.get(), qsgd.get()}) {
    at::Tensor payload = other->compress(at::randn({n}), gen);
    EXPECT_FALSE(other->majority_into({payload}, out));
  }
}

// compress_difference(x, y) gives compress(x - y)'s bytes: the scaled sign's chunk-by-chunk
// difference over several chunks and a ragged end, and the default path (through the caller's
// scratch, or off it for operands that are not contiguous fp32); x and y hold signed zeros,
// infinities and NaNs.
TEST(Compressor, CompressDifferenceIsTheEncodingOfTheDifference) {
  const std::vector<NamedCodec> codecs = every_codec();
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (const auto& [name, codec] : codecs)
    for (int64_t n : {int64_t{1}, int64_t{3 * kChunk + 5}}) {
      at::Tensor x = at::randn({n}, make_generator(n, 7, 0));
      at::Tensor y = at::randn({n}, make_generator(n, 8, 0));
      for (int64_t i = 0; i < n; i += 97) y[i] = specials[(i / 97) % 4];
      at::Tensor scratch;
      at::Generator g1 = make_generator(3, 0, 0), g2 = make_generator(3, 0, 0);
      const at::Tensor want = codec->compress(x - y, g1);
      EXPECT_TRUE(same_bits(codec->compress_difference(x, y, g2, scratch), want))
          << name << ", " << n << " elements";
      // Strided operands: the LibTorch difference, the same bytes.
      at::Tensor xs = at::empty({2 * n}).slice(0, 0, 2 * n, 2).copy_(x);
      at::Generator g3 = make_generator(3, 0, 0);
      EXPECT_TRUE(same_bits(codec->compress_difference(xs, y, g3, scratch), want))
          << name << ", " << n << " elements, strided";
    }
}

// sign_decoding gives the sign codecs' bits and two values, which decode (bit i of byte i / 8, 1 to
// `one`) to decompress's values bit for bit; it refuses a payload of the wrong size, and the
// other codecs have none.
TEST(Compressor, SignDecodingDecodesToTheDecompressedValues) {
  auto sign = make_sign_compressor();
  auto scaled_sign = make_scaled_sign_compressor();
  for (Compressor* codec : {sign.get(), scaled_sign.get()})
    for (int64_t n : {int64_t{1}, int64_t{1003}}) {
      at::Generator gen = make_generator(5, 0, 0);
      const at::Tensor payload = codec->compress(at::randn({n}, gen), gen);
      const std::optional<SignDecoding> d = codec->sign_decoding(payload, n);
      ASSERT_TRUE(d.has_value());
      EXPECT_TRUE(same_bits(testing::decode_sign_bits(d->bits, n, d->one, d->zero),
                            codec->decompress(payload, n)))
          << n << " elements";
      EXPECT_THROW(codec->sign_decoding(payload, n + 8), std::invalid_argument);
    }
  auto qsgd = make_qsgd_compressor(4, 512, false);
  auto fp16 = make_fp16_compressor();
  for (Compressor* other : {qsgd.get(), fp16.get()}) {
    at::Generator gen = make_generator(1, 0, 0);
    EXPECT_FALSE(other->sign_decoding(other->compress(at::randn({100}), gen), 100).has_value());
  }
}

// decompress_into(payload, out) writes decompress(payload, n)'s values, bit for bit, into `out`:
// small outputs, outputs above kStreamingBytes (non-temporal stores) and a misaligned view. An
// output of the wrong type or layout is refused, and so is one of another size where the payload's
// size says how many values it holds (a sparse payload's does not).
TEST(Compressor, DecompressIntoWritesTheValuesOfDecompressIntoCallerStorage) {
  const int64_t big = kStreamingBytes / 4 + 1003;
  const std::vector<NamedCodec> codecs = every_codec();
  for (const auto& [name, codec] : codecs)
    for (int64_t n : {int64_t{1}, int64_t{4099}, big}) {
      at::Tensor x = at::randn({n}, make_generator(n, 2, 0));
      at::Generator gen = make_generator(1, 0, 0);
      at::Tensor payload = codec->compress(x, gen);
      at::Tensor expected = codec->decompress(payload, n);
      at::Tensor buffer = at::full({n + 1}, 7.0f);
      for (int64_t offset : {0, 1}) {  // offset 1: 4 bytes off the 16-byte alignment
        at::Tensor out = buffer.narrow(0, offset, n);
        codec->decompress_into(payload, out);
        ASSERT_TRUE(same_bits(out.contiguous(), expected))
            << name << ", " << n << " elements, offset " << offset;
      }
    }
  at::Tensor x = at::randn({100});
  at::Generator gen = make_generator(1, 0, 0);
  for (const auto& [name, codec] : codecs) {
    at::Tensor payload = codec->compress(x, gen);
    at::Tensor wrong_type = at::empty({100}, at::kDouble);
    at::Tensor strided = at::empty({200}).slice(0, 0, 200, 2);
    at::Tensor wrong_size = at::empty({92});  // 12 sign bytes, not 13; 184 fp16 bytes, not 200
    EXPECT_THROW(codec->decompress_into(payload, wrong_type), std::invalid_argument) << name;
    EXPECT_THROW(codec->decompress_into(payload, strided), std::invalid_argument) << name;
    if (codec->payload_bytes(92) != codec->payload_bytes(100)) {
      EXPECT_THROW(codec->decompress_into(payload, wrong_size), std::invalid_argument) << name;
    }
  }
}

}  // namespace
}  // namespace cedar
