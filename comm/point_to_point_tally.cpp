#include "comm/point_to_point_tally.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "comm/device_stream.h"

namespace cedar {
void PointToPointTally::not_a_link(const char* op) const {
  throw CommError(std::string("allreduce links: ") + op +
                  " is not a point-to-point message (an allreduce scheme sends, receives and "
                  "sendrecvs only)");
}

double PointToPointTally::clock() const {
  wait_for_device(inner_.device());
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void PointToPointTally::finish(double t0, int64_t bytes) {
  double elapsed = clock() - t0;
  if (emulate_) {
    const double modeled = emulate_->seconds(1, bytes);
    if (modeled > elapsed) {
      std::this_thread::sleep_for(std::chrono::duration<double>(modeled - elapsed));
      elapsed = modeled;
    }
  }
  seconds_ += elapsed;
}

void PointToPointTally::send(const at::Tensor& t, int peer, int tag) {
  const double t0 = clock();
  inner_.send(t, peer, tag);
  ++messages_;
  bytes_sent_ += int64_t(t.nbytes());
  finish(t0, int64_t(t.nbytes()));
}

void PointToPointTally::recv(at::Tensor& t, int peer, int tag) {
  const double t0 = clock();
  inner_.recv(t, peer, tag);
  finish(t0, int64_t(t.nbytes()));
}

void PointToPointTally::sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source,
                                 int tag) {
  const double t0 = clock();
  inner_.sendrecv(out, dest, in, source, tag);
  ++messages_;
  bytes_sent_ += int64_t(out.nbytes());
  finish(t0, std::max(int64_t(out.nbytes()), int64_t(in.nbytes())));
}

}  // namespace cedar
