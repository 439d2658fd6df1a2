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

Digest state_hash(const Digest& genesis, int64_t step, const torch::Tensor& params,
                  const torch::Tensor& m, const torch::Tensor& v);

// Whole state in memory: returns the state hash.
Digest save_checkpoint(const std::filesystem::path& file, const CheckpointInfo& info,
                       const torch::Tensor& params, const torch::Tensor& m, const torch::Tensor& v);
// Validates magic, version, sizes and the state hash; errors name the file and the fault.
Checkpoint load_checkpoint(const std::filesystem::path& file);
// Elements [begin, begin+count) of params, m and v (count may run past P: zero-filled), without
// hashing the file; pair it with verify_checkpoint on one rank.
Checkpoint load_checkpoint_range(const std::filesystem::path& file, int64_t begin, int64_t count);

}  // namespace wit
