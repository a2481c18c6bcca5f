#pragma once
// Checkpoint files of one run: every rank writes its own state (model, optimizer, algorithm,
// data position, counters) as a map of named tensors into <dir>/rank-<r>.step-<s>.pt through a
// temporary file and a rename; once all ranks have written, rank 0 records the step in
// <dir>/LATEST (again temporary file + rename) and removes older files. A checkpoint therefore
// exists only when every rank's file does, and a crash at any point leaves the previous one intact.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>

namespace cedar {

using TensorMap = std::map<std::string, at::Tensor>;

class CheckpointDir {
 public:
  CheckpointDir(std::string dir, int rank, int world_size);

  const std::string& dir() const { return dir_; }
  // Creates the folder and checks that it is writable; throws std::runtime_error naming it.
  void prepare() const;
  // Writes this rank's state after `step` completed steps.
  void write(int64_t step, const TensorMap& state) const;
  // Rank 0, after every rank's write(step) returned: makes `step` the latest checkpoint.
  void commit(int64_t step) const;
  // Step of the latest complete checkpoint, or -1 when there is none. Throws when LATEST was
  // written for another world size.
  int64_t latest() const;
  // This rank's state of checkpoint `step`; throws naming the file when it is missing or
  // unreadable.
  TensorMap read(int64_t step) const;
  // Removes the checkpoint files and the folder (after a run completed).
  void remove() const;

 private:
  std::string rank_file(int rank, int64_t step) const;
  std::string dir_;
  int rank_, world_size_;
};

}  // namespace cedar
