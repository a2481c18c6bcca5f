// The allgather exchange of compressed payloads (algorithms/exchange/compressed_exchange.h): on
// 1-4 ranks every rank ends with, bit for bit, the rank-ordered sum of every rank's decoded payload
// divided by the rank count (or its sign, for the majority vote), computed here with LibTorch ops
// from payloads compressed here.
#include "algorithms/exchange/compressed_exchange.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/compressor.h"
#include "comm/inprocess_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

std::unique_ptr<Compressor> codec_named(const std::string& name) {
  if (name == "qsgd") return make_qsgd_compressor(4, 512, false);
  if (name == "sign") return make_sign_compressor();
  if (name == "scaled sign") return make_scaled_sign_compressor();
  return make_fp16_compressor();
}

// Rank r's gradients: a 3 x 1000 matrix and 77 values, standard normal.
std::vector<at::Tensor> grads_of(int rank) {
  at::Generator gen = make_generator(21, rank, 0);
  return {at::randn({3, 1000}, gen), at::randn({77}, gen)};
}

// The definition: decode each rank's payloads (compressed with that rank's generator, entry by
// entry), add them in rank order, then divide by the rank count or take the sign.
std::vector<at::Tensor> oracle(const std::string& codec_name, int ranks, Combine combine) {
  std::vector<at::Tensor> sums;
  for (int r = 0; r < ranks; ++r) {
    auto codec = codec_named(codec_name);
    at::Generator gen = make_generator(5, r, 0);
    std::vector<at::Tensor> g = grads_of(r);
    for (size_t i = 0; i < g.size(); ++i) {
      at::Tensor decoded =
          codec->decompress(codec->compress(g[i].reshape({-1}), gen), g[i].numel());
      if (r == 0)
        sums.push_back(decoded);
      else
        sums[i].add_(decoded);
    }
  }
  for (auto& s : sums) {
    if (combine == Combine::kAverage)
      s.div_(static_cast<double>(ranks));
    else
      s.sign_();
  }
  return sums;
}

TEST(CompressedExchange, EveryRankHoldsTheRankOrderedSumCombinedBitForBit) {
  for (const std::string codec_name : {"qsgd", "sign", "scaled sign", "fp16"})
    for (Combine combine : {Combine::kAverage, Combine::kMajority})
      for (int ranks : {1, 2, 3, 4}) {
        const std::vector<at::Tensor> expected = oracle(codec_name, ranks, combine);
        std::mutex mu;
        run_ranks(ranks, [&](Communicator& comm) {
          auto codec = codec_named(codec_name);
          std::vector<at::Tensor> g = grads_of(comm.rank());
          GradBucket bucket = testing::bucket_of_grads(g);
          at::Generator gen = make_generator(5, comm.rank(), 0);
          exchange_compressed(bucket, comm, *codec, nullptr, gen, combine);
          std::lock_guard<std::mutex> lock(mu);
          for (size_t i = 0; i < g.size(); ++i)
            EXPECT_TRUE(same_bits(bucket.entries[i].grad.reshape({-1}).contiguous(), expected[i]))
                << codec_name << (combine == Combine::kAverage ? " average" : " majority") << ", "
                << ranks << " ranks, rank " << comm.rank() << ", entry " << i;
        });
      }
}

// With a scaling (EF-signSGD's step size) and error feedback, over two steps: what is encoded is
// g * input + e, and what is written is the rank-ordered average divided by output, both as
// separate LibTorch operations here; the memories are p - D(C(p)). Bit for bit, with the scaled
// sign codec's one-pass average and with the codecs that decode and add in turn.
TEST(CompressedExchange, AScalingMultipliesTheInputAndDividesTheAverageBitForBit) {
  const float step = 0.05f;
  for (const std::string codec_name : {"scaled sign", "qsgd", "fp16"})
    for (int ranks : {1, 2, 3}) {
      std::vector<std::vector<at::Tensor>> memory(static_cast<size_t>(ranks),
                                                  std::vector<at::Tensor>(2));
      std::vector<std::vector<at::Tensor>> expected(2);  // per step, per entry
      // per step, per rank, per entry
      std::vector<std::vector<std::vector<at::Tensor>>> memory_after(
          2, std::vector<std::vector<at::Tensor>>(static_cast<size_t>(ranks)));
      for (int t = 0; t < 2; ++t) {
        for (int r = 0; r < ranks; ++r) {
          auto codec = codec_named(codec_name);
          at::Generator gen = make_generator(5, r, t);
          std::vector<at::Tensor> g = grads_of(r + 10 * t);
          for (size_t i = 0; i < g.size(); ++i) {
            at::Tensor& e = memory[static_cast<size_t>(r)][i];
            const at::Tensor gs = g[i].reshape({-1}) * step;
            const at::Tensor p = gs + (e.defined() ? e : at::zeros_like(gs));
            const at::Tensor payload = codec->compress(p, gen);
            const at::Tensor decoded = codec->decompress(payload, p.numel());
            e = p - decoded;
            memory_after[t][static_cast<size_t>(r)].push_back(e);
            if (r == 0)
              expected[t].push_back(decoded);
            else
              expected[t][i].add_(decoded);
          }
        }
        for (auto& sum : expected[t]) {
          if (ranks > 1) sum.div_(static_cast<double>(ranks));
          sum.div_(step);
        }
      }
      std::mutex mu;
      run_ranks(ranks, [&](Communicator& comm) {
        auto codec = codec_named(codec_name);
        ErrorFeedback feedback;
        for (int t = 0; t < 2; ++t) {
          std::vector<at::Tensor> g = grads_of(comm.rank() + 10 * t);
          GradBucket bucket = testing::bucket_of_grads(g);
          at::Generator gen = make_generator(5, comm.rank(), t);
          exchange_compressed(bucket, comm, *codec, &feedback, gen, Combine::kAverage, {},
                              {step, step});
          std::lock_guard<std::mutex> lock(mu);
          for (size_t i = 0; i < g.size(); ++i) {
            EXPECT_TRUE(
                same_bits(bucket.entries[i].grad.reshape({-1}).contiguous(), expected[t][i]))
                << codec_name << ", " << ranks << " ranks, rank " << comm.rank() << ", step " << t
                << ", entry " << i;
            EXPECT_TRUE(same_bits(feedback.memory(bucket.entries[i].name).reshape({-1}),
                                  memory_after[t][static_cast<size_t>(comm.rank())][i]))
                << codec_name << ": the memory of entry " << i << " after step " << t;
          }
        }
      });
    }
}

}  // namespace
}  // namespace cedar
