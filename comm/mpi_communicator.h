#pragma once
// Collectives and point-to-point messages over MPI (OpenMPI): MPI_COMM_WORLD, a duplicate of it
// for one device's tensors, or a communicator split from either.
//
// CUDA tensors: with a CUDA-aware MPI library (Open MPI's MPIX_Query_cuda_support(), asked at run
// time) MPI reads and writes their memory directly, once the device has finished producing them;
// otherwise they travel through host buffers (comm/host_staging.h: copy in, the operation on host
// memory, copy out), reused from call to call. Either way the result lands in the caller's tensor
// on its device. This serves clusters without NCCL and ranks that share one GPU (NCCL refuses two
// ranks on one device).
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/host_staging.h"

namespace cedar {

// True when this process was started by an MPI launcher (mpirun, srun --mpi=pmix).
bool launched_under_mpi();
// True once MPI is initialized with MPI_THREAD_SERIALIZED or more (needed by train.overlap).
bool mpi_threads_serialized();

// Initialises MPI once (MPI_THREAD_SERIALIZED) and finalises it at exit.
void ensure_mpi_initialized();

// True when the MPI library reads and writes CUDA device memory itself (asked at run time where
// the library tells, i.e. Open MPI's extension; false elsewhere).
bool mpi_cuda_aware();

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator();  // MPI_COMM_WORLD
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  // The CPU, or the device given to on_device(). Either accepts CPU and CUDA tensors; the
  // device says where the run keeps the tensors it hands over.
  at::Device device() const override { return device_; }
  void allreduce_sum(at::Tensor& t) override;
  at::Tensor allgather(const at::Tensor& t) override;
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override;
  void broadcast(at::Tensor& t, int root) override;
  void barrier() override;
  void send(const at::Tensor& t, int peer, int tag) override;
  void recv(at::Tensor& t, int peer, int tag) override;
  // MPI_Isend of t's own memory (a CUDA tensor: of a host copy), kept with t until it completes;
  // each post first lets go of the sends already delivered. wait_posted waits for the rest
  // (asleep with idle waiting).
  void post(const at::Tensor& t, int peer, int tag) override;
  void wait_posted() override;
  int recv_any(at::Tensor& t, int tag) override;
  int recv_any_up_to(at::Tensor& t, int tag, int64_t& received) override;
  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag) override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& level) override;

  // Collective: a communicator over the same ranks (MPI_Comm_dup: its messages never mix with
  // this one's) whose tensors live on `device` (the CPU or a CUDA device). It inherits idle
  // waiting and staging.
  std::unique_ptr<MpiCommunicator> on_device(const at::Device& device);

  // With `on`, CPU tensors travel through the host buffers too, as CUDA tensors do without a
  // CUDA-aware MPI: the staging path (copy in, operation, copy out) then runs, and is checked, on
  // machines without a GPU. Communicators split from this one inherit the setting.
  void stage_every_tensor(bool on) { stage_all_ = on; }
  // The host buffers (their sizes show that they are reused).
  const HostStaging& staging() const { return staging_; }

  // Ends every rank of the job (used when one rank fails so that none hangs).
  static void abort_job(int code);

  // With `on`, a rank that must wait for its peers waits asleep instead of spinning inside MPI:
  // every collective first waits until each rank of the communicator has reached it (a
  // non-blocking barrier, a few microseconds on one node, not counted as the algorithm's
  // traffic), and a receive until its message has arrived (MPI_Iprobe), both tested with pauses
  // growing from 20 to 500 us. A communication thread that shares the cores with backward
  // (train.overlap), or a parameter server's ranks waiting for one another, so leave the cores to
  // the computation. Communicators split from this one inherit the setting.
  void set_idle_wait(bool on) { idle_wait_ = on; }

 private:
  // The output of a gather: from 1 MiB on, one kept storage is reused once the caller has dropped
  // every view of the previous result (a fresh buffer of tens of MB takes longer to fault in than
  // the gather itself); while any view is alive a new storage is taken instead.
  at::Tensor gather_output(int64_t numel, const at::TensorOptions& options);
  // Takes ownership of `comm` (a split of another communicator), freed with this object.
  explicit MpiCommunicator(void* comm);

  // The rank whose message with `tag` a receive from any rank takes: of the ranks with one
  // waiting, the first from next_any_ on, in rotating order. MPI's matching of MPI_ANY_SOURCE
  // promises no fairness, and Open MPI's shared-memory transport served two of a parameter
  // server's four workers for 880 updates while the other two's pushes waited.
  int next_sender(int tag);
  // recv_any (`exact`: the message fills t) and recv_any_up_to (t's first `received` elements).
  int receive_any(at::Tensor& t, int tag, const char* op, bool exact, int64_t& received);
  // With idle_wait_: returns once every rank has called it, sleeping while it waits.
  void await_peers();
  // Whether MPI works on a host copy of `t` rather than on t's own memory.
  bool staged(const at::Tensor& t) const;
  // The memory MPI reads for `t`: t itself (once its device has produced it), or `slot`'s host
  // buffer holding a copy.
  at::Tensor readable(const at::Tensor& t, HostStaging::Slot slot);
  // Where MPI writes what belongs in `t`: t itself, or `slot`'s host buffer (then copy_out).
  at::Tensor writable(const at::Tensor& t, HostStaging::Slot slot);
  // A communicator of this one's settings over `comm` (owned).
  std::unique_ptr<MpiCommunicator> derived(void* comm) const;

  struct PostedSend;  // an MPI_Request and the tensor it reads
  // Drops the posted sends that have completed.
  void reap_posted();

  std::vector<std::unique_ptr<PostedSend>> posted_;
  void* comm_ = nullptr;  // the MPI_Comm (kept opaque so that users need no <mpi.h>)
  bool owned_ = false;
  bool idle_wait_ = false;
  bool stage_all_ = false;
  int next_any_ = 0;  // where the next receive from any rank starts looking
  int rank_ = 0, size_ = 1;
  at::Device device_ = at::Device(at::kCPU);
  at::Tensor gather_storage_;  // uint8, the reusable output storage (CPU results)
  HostStaging staging_;
};

}  // namespace cedar
