#include "runner/ps/checkpoint.h"

namespace cedar {

void PsCheckpointPlan::write(int64_t version, const TensorMap& state, Communicator& control) const {
  dir->write(version, state);
  control.barrier();
  if (control.rank() == 0) dir->commit(version);
  control.barrier();
}

}  // namespace cedar
