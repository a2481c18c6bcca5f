// Tensors and devices in the communication layer: the metering layer's device check (a tensor
// not on the backend's device is an error naming the operation and the tensor), and the host
// buffers MPI stages device tensors through (copies in and out, reused, grown).
#include <gtest/gtest.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/host_staging.h"
#include "comm/metered_communicator.h"

namespace cedar {
namespace {

// A backend whose tensors live on the meta device (not the CPU, and present in every build);
// it counts the calls that reach it.
class MetaBackend final : public Communicator {
 public:
  int calls = 0;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "meta-backend"; }
  at::Device device() const override { return at::Device(at::kMeta); }
  void allreduce_sum(at::Tensor&) override { ++calls; }
  at::Tensor allgather(const at::Tensor& t) override {
    ++calls;
    return t;
  }
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override {
    ++calls;
    return {t, t};
  }
  void broadcast(at::Tensor&, int) override { ++calls; }
  void barrier() override { ++calls; }
  void send(const at::Tensor&, int, int) override { ++calls; }
  void recv(at::Tensor&, int, int) override { ++calls; }
  int recv_any(at::Tensor&, int) override {
    ++calls;
    return 1;
  }
  void sendrecv(const at::Tensor&, int, at::Tensor&, int, int) override { ++calls; }
  std::unique_ptr<Communicator> split(int, int, const std::string&) override {
    return std::make_unique<MetaBackend>();
  }
};

// The message of the CommError `op` throws ("" when it throws none).
template <class Op>
std::string error_of(Op op) {
  try {
    op();
  } catch (const CommError& e) {
    return e.what();
  }
  return "";
}

TEST(MeteredDeviceCheck, ACpuTensorForAnotherDeviceNamesTheOperationAndTheTensor) {
  MetaBackend inner;
  MeteredCommunicator comm(inner, /*check_devices=*/true);
  auto t = torch::zeros({2, 3});
  auto in = torch::zeros({4}, torch::kLong);
  const std::string e = error_of([&] { comm.allreduce_sum(t); });
  EXPECT_EQ(e,
            "metered allreduce: tensor of shape [2, 3], Float, on cpu, but backend "
            "meta-backend works on meta tensors");
  EXPECT_NE(error_of([&] { comm.allgather(t); }).find("metered allgather: tensor of shape [2, 3]"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { comm.allgatherv(in); }).find("metered allgatherv: tensor of shape [4], Long"),
      std::string::npos);
  EXPECT_NE(error_of([&] { comm.broadcast(t, 0); }).find("metered broadcast"), std::string::npos);
  EXPECT_NE(error_of([&] { comm.send(t, 1); }).find("metered send"), std::string::npos);
  EXPECT_NE(error_of([&] { comm.recv(in, 1); }).find("metered recv"), std::string::npos);
  EXPECT_NE(error_of([&] { comm.recv_any(in); }).find("metered recv_any"), std::string::npos);
  int64_t arrived = 0;
  EXPECT_NE(error_of([&] { comm.recv_any_up_to(in, 0, arrived); }).find("metered recv_any_up_to"),
            std::string::npos);
  auto meta = torch::empty({4}, torch::TensorOptions().dtype(torch::kLong).device(torch::kMeta));
  // Either side of a sendrecv on the wrong device is named.
  EXPECT_NE(error_of([&] {
              comm.sendrecv(meta, 1, in, 1);
            }).find("metered sendrecv: tensor of shape [4], Long, on cpu"),
            std::string::npos);
  // A sub-communicator checks too.
  auto part = comm.split(0, 0, "intra");
  EXPECT_NE(error_of([&] { part->allreduce_sum(t); }).find("metered allreduce"), std::string::npos);
  EXPECT_EQ(inner.calls, 0) << "a tensor on the wrong device reached the backend";
  EXPECT_EQ(comm.totals().count("allreduce"), 0u) << "a refused call was metered";

  // Tensors on the backend's device pass and are metered.
  auto ok = torch::empty({2, 3}, torch::TensorOptions().device(torch::kMeta));
  comm.allreduce_sum(ok);
  comm.sendrecv(meta, 1, meta, 1);
  EXPECT_EQ(inner.calls, 2);
  EXPECT_EQ(comm.totals().at("allreduce").payload_bytes, 24);
}

TEST(MeteredDeviceCheck, OffItPassesEveryTensorThroughAndIsOffByDefaultInReleaseBuilds) {
  MetaBackend inner;
  MeteredCommunicator unchecked(inner, /*check_devices=*/false);
  auto t = torch::zeros({2, 3});
  unchecked.allreduce_sum(t);
  EXPECT_EQ(inner.calls, 1);
  MeteredCommunicator by_default(inner);
#ifdef NDEBUG
  EXPECT_EQ(error_of([&] { by_default.allreduce_sum(t); }), "");
  EXPECT_EQ(inner.calls, 2);
#else
  EXPECT_NE(error_of([&] { by_default.allreduce_sum(t); }), "");
  EXPECT_EQ(inner.calls, 1);
#endif
}

TEST(LocalCommunicator, ReportsTheDeviceItIsGivenAndItsSplitsKeepIt) {
  EXPECT_EQ(LocalCommunicator().device(), at::Device(at::kCPU));
  LocalCommunicator meta{at::Device(at::kMeta)};
  EXPECT_EQ(meta.device(), at::Device(at::kMeta));
  EXPECT_EQ(meta.split(0, 0, "intra")->device(), at::Device(at::kMeta));
  EXPECT_EQ(MeteredCommunicator(meta).device(), at::Device(at::kMeta));
}

TEST(HostStaging, CopiesInAndOutThroughBuffersItReusesAndGrows) {
  HostStaging staging;
  EXPECT_EQ(staging.capacity(HostStaging::kInput), 0);
  // A strided tensor arrives as its values in row-major order.
  auto t = torch::arange(12, torch::kFloat).view({3, 4}).t();
  at::Tensor in = staging.copy_in(t, HostStaging::kInput);
  EXPECT_TRUE(in.is_contiguous());
  EXPECT_EQ(in.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(in, t.reshape({-1})));
  EXPECT_EQ(staging.capacity(HostStaging::kInput), 48);
  EXPECT_FALSE(staging.pinned(HostStaging::kInput));  // CPU tensors need no page-locked memory
  // The same buffer serves the next call of that size or less, in any dtype.
  const void* buffer = in.data_ptr();
  at::Tensor again = staging.copy_in(torch::full({5}, int64_t{7}), HostStaging::kInput);
  EXPECT_EQ(again.data_ptr(), buffer);
  EXPECT_EQ(again.scalar_type(), torch::kLong);
  EXPECT_TRUE(torch::equal(again, torch::full({5}, int64_t{7})));
  EXPECT_EQ(staging.capacity(HostStaging::kInput), 48);
  // A larger one grows it; the output slot is other memory.
  at::Tensor big = staging.copy_in(torch::ones({100}, torch::kDouble), HostStaging::kInput);
  EXPECT_EQ(staging.capacity(HostStaging::kInput), 800);
  at::Tensor out = staging.room(6, torch::kFloat, HostStaging::kOutput, at::Device(at::kCPU));
  EXPECT_EQ(staging.capacity(HostStaging::kOutput), 24);
  EXPECT_NE(out.data_ptr(), big.data_ptr());
  // Copied out into the caller's tensor, whatever its shape.
  out.copy_(torch::arange(6, torch::kFloat));
  auto result = torch::zeros({2, 3});
  HostStaging::copy_out(out, result);
  EXPECT_TRUE(torch::equal(result, torch::arange(6, torch::kFloat).view({2, 3})));
}

}  // namespace
}  // namespace cedar
