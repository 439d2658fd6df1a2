// Checkpoints as tensors: saving and loading the training state (trainer/checkpoint_file.h has
// the file format and its checks).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <future>

#include "trainer/checkpoint_file.h"

namespace wit {

struct Checkpoint {
  CheckpointInfo info;
  torch::Tensor params, m, v;  // (P,) fp32 each, or the loaded range of them
};

// The state hash of the given version (the run's checkpoints say which), its leaves hashed on
// the machine's cores.
Digest state_hash(const Digest& genesis, int64_t step, const torch::Tensor& params,
                  const torch::Tensor& m, const torch::Tensor& v,
                  uint32_t version = kCheckpointVersion);

// Whole state in memory: returns the state hash.
Digest save_checkpoint(const std::filesystem::path& file, const CheckpointInfo& info,
                       const torch::Tensor& params, const torch::Tensor& m, const torch::Tensor& v);

// The whole training state as host copies, taken between steps, for a checkpoint written while
// training goes on.
struct HostState {
  torch::Tensor params, m, v;  // (P,) contiguous fp32 on the host (pinned under a GPU)
};

// A checkpoint written from a snapshot on a thread of its own (save_checkpoint: temporary file,
// fsync, rename), while the caller trains on. The snapshot must not change until it finished.
// Destroyed unfinished, it waits for the write.
class BackgroundCheckpoint {
 public:
  BackgroundCheckpoint(std::filesystem::path file, CheckpointInfo info, const HostState& state);
  bool finished() const;
  // Waits for the file to be durable: its state hash, or the write's error rethrown.
  Digest wait();

 private:
  std::future<Digest> done_;
};

// Validates magic, version, sizes and the state hash; errors name the file and the fault.
Checkpoint load_checkpoint(const std::filesystem::path& file);
// The parameters alone (m and v left empty): a version-3 file is read only as far as the
// weights' leaves, each checked against the leaf table; a version-2 file is read whole.
Checkpoint load_checkpoint_weights(const std::filesystem::path& file);
// Elements [begin, begin+count) of params, m and v (count may run past P: zero-filled), from one
// open of the file. Version 3: every leaf the range touches is read and checked against the leaf
// table, itself checked against the state hash, so only bytes the hash covers are loaded. A
// version-2 file has no table: with `expected` its whole payload is hashed in this open, and
// without, nothing is checked. With `expected`, the file's state hash must be it (a file checked
// earlier and replaced since is refused).
Checkpoint load_checkpoint_range(const std::filesystem::path& file, int64_t begin, int64_t count,
                                 const Digest* expected = nullptr);

}  // namespace wit
