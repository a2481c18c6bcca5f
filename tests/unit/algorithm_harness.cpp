#include "tests/unit/algorithm_harness.h"

#include <cstring>

#include "comm/bus_bytes.h"

namespace cedar::testing {

std::unique_ptr<Algorithm> make_algorithm(const std::string& name, const std::string& yaml) {
  return find_algorithm(name).make(YAML::Load(yaml), Source{}, nullptr);
}

YAML::Node resolved_params(const std::string& name, const std::string& yaml) {
  std::string resolved;
  find_algorithm(name).make(YAML::Load(yaml), Source{}, &resolved);
  return YAML::Load(resolved);
}

std::string algorithm_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

GradBucket bucket_of_named_shapes(const NamedShapes& shapes, int64_t index) {
  int64_t total = 0;
  for (const auto& s : shapes) total += c10::multiply_integers(s.second);
  GradBucket b;
  b.index = index;
  b.flat = torch::zeros({total});
  int64_t off = 0;
  for (const auto& [name, shape] : shapes) {
    const int64_t n = c10::multiply_integers(shape);
    b.entries.push_back({name, torch::zeros(shape), b.flat.narrow(0, off, n).view(shape)});
    off += n;
  }
  return b;
}

GradBucket bucket_of_shapes(const std::vector<std::vector<int64_t>>& shapes, int64_t index,
                            const std::string& prefix) {
  NamedShapes named;
  for (size_t i = 0; i < shapes.size(); ++i)
    named.push_back({prefix + std::to_string(i), shapes[i]});
  return bucket_of_named_shapes(named, index);
}

GradBucket bucket_of_grads(const std::vector<at::Tensor>& grads, int64_t index) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& g : grads) shapes.push_back(g.sizes().vec());
  GradBucket b = bucket_of_shapes(shapes, index, "p");
  for (size_t i = 0; i < grads.size(); ++i) b.entries[i].grad.copy_(grads[i]);
  return b;
}

GradBucket bucket_of_params(const std::vector<NamedTensor>& params, int64_t index) {
  NamedShapes shapes;
  for (const auto& p : params) shapes.push_back({p.name, p.tensor.sizes().vec()});
  GradBucket b = bucket_of_named_shapes(shapes, index);
  for (size_t i = 0; i < params.size(); ++i) b.entries[i].param = params[i].tensor;
  return b;
}

at::Tensor randn_seeded(int64_t n, uint64_t seed) {
  auto gen = make_generator(seed, 0, 0);
  return torch::randn({n}, gen);
}

at::Tensor topk_dense(const at::Tensor& p, int64_t k) {
  auto idx = std::get<1>(torch::topk(p.abs(), k));
  auto out = torch::zeros_like(p);
  out.index_put_({idx}, p.index_select(0, idx));
  return out;
}

std::vector<std::vector<int64_t>> resnet20_shapes() {
  // Stem conv + BN (weight, bias), three stages of three basic blocks (two convs, two BNs), fc.
  std::vector<std::vector<int64_t>> s = {{16, 3, 3, 3}, {16}, {16}};
  int64_t in = 16;
  for (int64_t width : {16, 32, 64})
    for (int block = 0; block < 3; ++block) {
      s.push_back({width, in, 3, 3});
      s.push_back({width});
      s.push_back({width});
      s.push_back({width, width, 3, 3});
      s.push_back({width});
      s.push_back({width});
      in = width;
    }
  s.push_back({10, 64});
  s.push_back({10});
  return s;
}

StepOptions decaying_lr_options() {
  StepOptions o{77, 1};
  o.lr_schedule = [](int64_t t) { return 0.1 / (1 + t); };
  return o;
}

std::vector<at::Tensor> quantizer_grads(int rank, int64_t step) {
  at::Generator gen = make_generator(5, rank, step, 3);
  at::Tensor a = torch::randn({4, 3, 3, 3}, gen) * (rank + 1);
  a.view({-1})[7] = 40.0f * (rank + 1);  // an outlier beyond 2.5 sigma
  return {a, torch::randn({257}, gen), torch::randn({10}, gen) * 1e-2};
}

std::vector<float> values_of(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.numel() != b.numel()) return false;
  if (a.numel() == 0) return true;  // an empty tensor may have no storage to compare
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

std::string decode_error(Compressor& codec, const at::Tensor& payload, int64_t numel) {
  try {
    codec.decompress(payload, numel);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

at::Tensor filler_bytes(int64_t n) { return at::full({n}, 0x5a, at::kByte); }

at::Tensor decode_sign_bits(const uint8_t* bits, int64_t n, float one, float zero) {
  at::Tensor out = at::empty({n});
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) o[i] = (bits[i / 8] >> (i % 8)) & 1 ? one : zero;
  return out;
}

std::vector<float> codec_test_values() {
  return {1.5f, -0.5f, 2.0f, 0.0f, -1.0f, 3.0f, -2.0f, 0.5f, 1.0f, -3.0f, 0.25f, -0.25f, 4.0f};
}

namespace {

// Fills the context of step `step` from the options.
StepContext context_of(int64_t step, const StepOptions& options) {
  StepContext ctx;
  ctx.step = step;
  ctx.seed = options.seed;
  ctx.lr = options.lr_at(step);
  if (options.configure) options.configure(ctx);
  return ctx;
}

std::vector<at::Tensor> clones(const GradBucket& b) {
  std::vector<at::Tensor> out;
  for (const auto& e : b.entries) out.push_back(e.grad.clone());
  return out;
}

std::vector<at::Tensor> clones(const std::vector<NamedTensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.tensor.clone());
  return out;
}

}  // namespace

std::vector<std::vector<StepResult>> run_steps(int ranks, const std::string& name,
                                               const std::string& yaml, int steps,
                                               const GradsOf& grads_of,
                                               const StepOptions& options) {
  return on_ranks(ranks, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    auto alg = make_algorithm(name, yaml);
    std::vector<NamedTensor> params;
    std::vector<StepResult> out;
    for (int64_t t = 0; t < steps; ++t) {
      GradBucket b = bucket_of_grads(grads_of(r, t), options.bucket_index);
      if (t == 0) {
        for (const auto& e : b.entries) params.push_back({e.name, e.param});
        alg->setup(params, comm);
      }
      for (size_t i = 0; i < params.size(); ++i) b.entries[i].param = params[i].tensor;
      StepContext ctx = context_of(t, options);
      // The step's batch at other parameters: these gradients do not depend on them.
      ctx.batch_gradient_at = [&](const std::vector<at::Tensor>&) { return grads_of(r, t); };
      comm.reset_step();
      alg->reduce_gradients(b, comm, ctx);
      alg->after_step(params, {}, comm, ctx);
      out.push_back({clones(b), clones(params), comm.step(), ctx.stats});
    }
    return out;
  });
}

std::vector<StepResult> train_steps(Algorithm& alg, std::vector<NamedTensor>& params,
                                    Communicator& comm, int64_t from, int64_t to,
                                    const TrainGradsOf& grads_of, const StepOptions& options) {
  MeteredCommunicator metered(comm);
  std::vector<StepResult> out;
  for (int64_t step = from; step < to; ++step) {
    GradBucket b = bucket_of_params(params, options.bucket_index);
    const auto grads = grads_of(comm.rank(), step, params);
    for (size_t i = 0; i < grads.size(); ++i) b.entries[i].grad.copy_(grads[i]);
    StepContext ctx = context_of(step, options);
    ctx.batch_gradient_at = [&](const std::vector<at::Tensor>& at) {
      std::vector<NamedTensor> moved;
      for (size_t i = 0; i < params.size() && i < at.size(); ++i)
        moved.push_back({params[i].name, at[i]});
      return grads_of(comm.rank(), step, moved);
    };
    metered.reset_step();
    alg.reduce_gradients(b, metered, ctx);
    for (size_t i = 0; i < params.size(); ++i) params[i].tensor.sub_(b.entries[i].grad, ctx.lr);
    alg.after_step(params, {}, metered, ctx);
    out.push_back({clones(b), clones(params), metered.step(), ctx.stats});
  }
  return out;
}

at::Tensor reduce_once(Algorithm& alg, const at::Tensor& grad, int64_t step,
                       const StepOptions& options) {
  LocalCommunicator comm;
  GradBucket b = bucket_of_grads({grad}, options.bucket_index);
  StepContext ctx = context_of(step, options);
  alg.reduce_gradients(b, comm, ctx);
  return b.entries[0].grad.clone();
}

std::vector<int64_t> resnet20_step_payloads(const std::string& name, const std::string& yaml) {
  const auto shapes = resnet20_shapes();
  auto grads_of = [&](int r, int64_t t) {
    std::vector<at::Tensor> g;
    at::Generator gen = make_generator(11, r, t);
    for (const auto& s : shapes) g.push_back(torch::randn(s, gen));
    return g;
  };
  std::vector<int64_t> payloads;
  for (const auto& rank : run_steps(2, name, yaml, 1, grads_of))
    payloads.push_back(rank[0].comm.payload_bytes);
  return payloads;
}

void expect_ranks_agree(const std::vector<std::vector<StepResult>>& results) {
  for (size_t r = 1; r < results.size(); ++r) {
    ASSERT_EQ(results[r].size(), results[0].size()) << "rank " << r;
    for (size_t t = 0; t < results[r].size(); ++t) {
      ASSERT_EQ(results[r][t].grads.size(), results[0][t].grads.size());
      for (size_t i = 0; i < results[r][t].grads.size(); ++i)
        EXPECT_TRUE(torch::equal(results[r][t].grads[i], results[0][t].grads[i]))
            << "rank " << r << " step " << t << " tensor " << i;
    }
  }
}

void expect_allgather_of_decodings(const std::vector<std::vector<StepResult>>& results,
                                   const DecodedOf& decoded_of, int64_t payload_bytes) {
  const int ranks = static_cast<int>(results.size());
  for (size_t t = 0; t < results[0].size(); ++t) {
    std::vector<at::Tensor> sum;
    for (int r = 0; r < ranks; ++r) {
      const std::vector<at::Tensor> decoded = decoded_of(r, static_cast<int64_t>(t));
      for (size_t i = 0; i < decoded.size(); ++i) {
        if (r == 0) {
          sum.push_back(decoded[i]);
        } else {
          sum[i] = sum[i] + decoded[i];
        }
      }
    }
    ASSERT_EQ(results[0][t].grads.size(), sum.size()) << "step " << t;
    for (size_t i = 0; i < sum.size(); ++i)
      EXPECT_TRUE(torch::equal(results[0][t].grads[i].reshape({-1}), sum[i].reshape({-1}) / ranks))
          << ranks << " ranks, step " << t << ", tensor " << i;
    const CommCounters& c = results[0][t].comm;
    EXPECT_EQ(c.calls, 1) << "step " << t;
    EXPECT_EQ(c.payload_bytes, payload_bytes) << "step " << t;
    EXPECT_EQ(c.bus_bytes, allgather_bus_bytes(payload_bytes * ranks, ranks)) << "step " << t;
  }
}

DeviceExchange exchange_on_device(const std::string& name, MeteredCommunicator& comm) {
  const at::Device device = comm.device();
  auto alg = make_algorithm(name);
  auto gen = make_generator(5, 0, 0);
  std::vector<NamedTensor> params = {{"w", torch::randn({12, 10}, gen).to(device)},
                                     {"b", torch::randn({30}, gen).to(device)}};
  alg->setup(params, comm);
  DeviceExchange out;
  for (int64_t step = 0; step < 3; ++step) {
    GradBucket bucket = bucket_of_shapes({{12, 10}, {30}}, 0, "p");
    bucket.flat = bucket.flat.to(device);
    int64_t off = 0;
    for (size_t i = 0; i < bucket.entries.size(); ++i) {
      auto& e = bucket.entries[i];
      e.name = params[i].name;
      e.param = params[i].tensor;
      e.grad = bucket.flat.narrow(0, off, e.grad.numel()).view(e.grad.sizes());
      off += e.grad.numel();
      auto g = make_generator(77, comm.rank(), step, i);
      e.grad.copy_(torch::randn(e.grad.sizes(), g).to(device));
    }
    StepContext ctx;
    ctx.step = step;
    ctx.steps_per_epoch = 10;
    ctx.lr = 0.1;
    ctx.base_lr = 0.1;
    ctx.seed = 9;
    alg->reduce_gradients(bucket, comm, ctx);
    out.stayed_on_device = out.stayed_on_device && bucket.flat.device() == device;
    for (size_t i = 0; i < params.size(); ++i) params[i].tensor.sub_(bucket.entries[i].grad, 0.1);
    alg->after_step(params, {}, comm, ctx);
    out.last_update = bucket.flat.cpu();
  }
  out.totals = comm.totals();
  return out;
}

}  // namespace cedar::testing
