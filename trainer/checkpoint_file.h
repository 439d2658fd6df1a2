// Checkpoint files: the format, its checks and its streaming writer, without torch (the file
// readers are fuzzed alone; trainer/checkpoint.h adds tensors). The full training state
// (parameters, AdamW moments, step), bound to the run it belongs to (its witness log's genesis),
// written atomically and checked on load.
//
// File (version 2): "WITCKPT1" | u32 2 | u32 0 | u64 step | u64 P | genesis (32 bytes) |
//       params | m | v (P fp32 little-endian each, canonical flat order) |
//       state hash (32 bytes) | "WITCKEND"
// The state hash SHA-256("wit-state-v2" ‖ genesis ‖ u64 step ‖ u64 P ‖ params ‖ m ‖ v) covers
// every byte before it: the file is canonical (one file and one hash whatever the world size or
// sharding that produced it), so its state hash is its content hash, and no header field can
// change without changing it. Any world size can load any checkpoint (a rank reads just its
// range). The hash sits at the end so a sharded state can stream into the file through one rank.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/sha256.h"

namespace wit {

constexpr uint32_t kCheckpointVersion = 2;

struct CheckpointInfo {
  int64_t step = 0;  // steps completed
  int64_t num_params = 0;
  Digest genesis{};  // the run's witness log genesis: config, dataset, model size, key
  Digest state_hash{};
};

// The state hash, open for streaming: feed params, m and v in order, then finish().
Sha256 state_hasher(const Digest& genesis, int64_t step, int64_t num_params);

std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir, int64_t step);

// Streams a checkpoint into place: the header, then params, m and v in order (any number of
// write() calls each), then finish() adds the hash, fsyncs and renames the temporary file over
// `file`. Destroyed unfinished, it removes the temporary and leaves `file` as it was.
class CheckpointWriter {
 public:
  CheckpointWriter(std::filesystem::path file, const CheckpointInfo& info);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  void write(const float* data, int64_t n);
  Digest finish();

 private:
  std::filesystem::path file_, tmp_;
  std::FILE* f_ = nullptr;
  Sha256 hash_;
  int64_t expected_ = 0, written_ = 0;
};

// A checkpoint file's header and trailer, checked (not its payload's hash), and where the
// payload starts.
struct CheckpointLayout {
  CheckpointInfo info;
  uint64_t payload = 0;  // offset of params
};
CheckpointLayout read_checkpoint_layout(std::ifstream& in, const std::filesystem::path& file);
// Header and hash only (cheap): the claimed step, size, run and state hash, not yet checked.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& file);
// Streams the file and checks the state hash; throws naming the file when it does not match.
void verify_checkpoint(const std::filesystem::path& file);
// The same checks on a checkpoint's bytes in memory (for tests and fuzzing).
CheckpointInfo parse_checkpoint(const std::string& bytes, const std::string& where);
// The checkpoint with the highest step in run_dir/checkpoints, if any.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& run_dir);

}  // namespace wit
