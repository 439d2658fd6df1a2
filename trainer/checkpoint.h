// Checkpoints: the full training state (parameters, AdamW moments, step) with the config and
// dataset root it belongs to, written atomically and checked on load.
//
// File: "WITCKPT1" | u32 version | u32 0 | u64 header bytes | header JSON | params | m | v
// (fp32 little-endian, canonical flat order). The state hash is a canonical commitment to
// (step, params, m, v): independent of how the state was sharded when it was produced.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <string>

#include "core/sha256.h"

namespace wit {

constexpr uint32_t kCheckpointVersion = 1;

struct CheckpointInfo {
  int64_t step = 0;  // steps completed
  int64_t num_params = 0;
  std::string config_yaml;  // the resolved config of the run
  Digest manifest_root{};   // dataset the run trains on
  Digest state_hash{};
};

struct Checkpoint {
  CheckpointInfo info;
  torch::Tensor params, m, v;  // (P,) fp32 each
};

// SHA-256("wit-state-v1" ‖ u64 step ‖ u64 P ‖ params ‖ m ‖ v).
Digest state_hash(int64_t step, const torch::Tensor& params, const torch::Tensor& m,
                  const torch::Tensor& v);

std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir, int64_t step);
// Writes atomically (temp file, fsync, rename); returns the state hash.
Digest save_checkpoint(const std::filesystem::path& file, const CheckpointInfo& info,
                       const torch::Tensor& params, const torch::Tensor& m, const torch::Tensor& v);
// Validates magic, version, sizes and the state hash; errors name the file and the fault.
Checkpoint load_checkpoint(const std::filesystem::path& file);
// Only the header (cheap): step, config, hashes.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& file);
// The checkpoint with the highest step in run_dir/checkpoints, if any.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& run_dir);

}  // namespace wit
