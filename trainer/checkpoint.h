// Checkpoints as tensors: saving and loading the training state (trainer/checkpoint_file.h has
// the file format and its checks).
#pragma once

#include <torch/torch.h>

#include <filesystem>

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

// Validates magic, version, sizes and the state hash; errors name the file and the fault.
Checkpoint load_checkpoint(const std::filesystem::path& file);
// The parameters alone (m and v left empty): a version-3 file is read only as far as the
// weights' leaves, each checked against the leaf table; a version-2 file is read whole.
Checkpoint load_checkpoint_weights(const std::filesystem::path& file);
// Elements [begin, begin+count) of params, m and v (count may run past P: zero-filled), without
// hashing the file; pair it with verify_checkpoint on one rank.
Checkpoint load_checkpoint_range(const std::filesystem::path& file, int64_t begin, int64_t count);

}  // namespace wit
