// Checkpoint files: the format, its checks and its streaming writer, without torch (the file
// readers are fuzzed alone; trainer/checkpoint.h adds tensors). The full training state
// (parameters, AdamW moments, step), bound to the run it belongs to (its witness log's genesis),
// written atomically and checked on load.
//
// File (version 3): "WITCKPT1" | u32 3 | u32 0 | u64 step | u64 P | genesis (32 bytes) |
//       params | m | v (P fp32 little-endian each, canonical flat order) |
//       leaf table (L digests) | state hash (32 bytes) | "WITCKEND"
// The payload (params, m, v: 12·P bytes) is cut into L leaves of checkpoint_leaf_bytes(P) (the
// last one shorter); leaf i's digest is SHA-256("wit-leaf-v3" ‖ its bytes), and the state hash is
// SHA-256("wit-state-v3" ‖ genesis ‖ u64 step ‖ u64 P ‖ u64 leaf bytes ‖ leaf 0 ‖ … ‖ leaf L-1).
// It covers every byte but the constants (magic, version, the zero, the end marker): the file is
// canonical (one file and one hash whatever the world size or sharding that produced it), and no
// header field can change without changing it. The leaf table lets a reader check any part of
// the payload against the state hash without reading the rest: a verifier samples leaves of the
// checkpoints it does not load, and a sampler reads only the weights. Any world size can load any
// checkpoint (a rank reads just its range). The hash sits at the end so a sharded state can
// stream into the file through one rank.
//
// Version 2 (still read): the same header and payload, no leaf table, and the state hash
// SHA-256("wit-state-v2" ‖ genesis ‖ u64 step ‖ u64 P ‖ params ‖ m ‖ v), which only a whole read
// can check.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/sha256.h"

namespace wit {

constexpr uint32_t kCheckpointVersion = 3;         // what this build writes

struct CheckpointInfo {
  int64_t step = 0;  // steps completed
  int64_t num_params = 0;
  Digest genesis{};  // the run's witness log genesis: config, dataset, model size, key
  Digest state_hash{};
  uint32_t version = kCheckpointVersion;  // of the file (the state hash's formula follows it)
};

// A version-3 checkpoint's leaf size: the largest power of two ℓ with ℓ² <= 24·P, within
// [4 KiB, 1 MiB]. It balances what a sampling reader reads: the table (32·12P/ℓ bytes) against 16
// sampled leaves (16·ℓ). 8 KiB for the tiny config, 32 KiB at 124M, 128 KiB at 1.5B.
uint64_t checkpoint_leaf_bytes(int64_t num_params);
// Leaves of a version-3 checkpoint of P parameters, and one leaf's digest.
uint64_t checkpoint_leaf_count(int64_t num_params);
Digest checkpoint_leaf_hash(const void* data, size_t n);

// The state hash, open for streaming: feed params, m and v in order, in chunks of any size,
// then finish(). For version 3 it keeps the leaf table (leaves()).
class StateHasher {
 public:
  StateHasher(const Digest& genesis, int64_t step, int64_t num_params,
              uint32_t version = kCheckpointVersion);
  StateHasher& update(const void* data, size_t bytes);
  Digest finish();
  const std::vector<Digest>& leaves() const { return leaves_; }

 private:
  uint32_t version_;
  uint64_t leaf_bytes_;
  Sha256 root_;              // version 2: every byte; version 3: the leaf digests
  std::optional<Sha256> leaf_;  // version 3: the open leaf
  uint64_t in_leaf_ = 0;
  std::vector<Digest> leaves_;
};

// The state hash of a whole state in memory. Version 3 hashes its leaves on `threads` threads.
Digest state_hash_of(const Digest& genesis, int64_t step, int64_t num_params, const float* params,
                     const float* m, const float* v, uint32_t version = kCheckpointVersion,
                     int threads = 1);

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
  StateHasher hash_;
  int64_t expected_ = 0, written_ = 0;
};

// A checkpoint file's header and trailer, checked (not its payload's hash), and where its parts
// start.
struct CheckpointLayout {
  CheckpointInfo info;
  uint64_t payload = 0;  // offset of params
  uint64_t table = 0;    // version 3: offset of the leaf table
  uint64_t leaves = 0;   // version 3: leaves in the table
};
CheckpointLayout read_checkpoint_layout(std::ifstream& in, const std::filesystem::path& file);
// Opens a checkpoint for reading; throws naming it when it is missing or not a regular file
// (a FIFO in its place would block the open for ever).
std::ifstream open_checkpoint(const std::filesystem::path& file);
// Header and hash only (cheap): the claimed step, size, run and state hash, not yet checked.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& file);
// The whole payload of an open checkpoint streamed into a StateHasher, not yet finished (its
// leaves, for version 3, come after finish()).
StateHasher hash_payload(std::ifstream& in, const CheckpointLayout& l,
                         const std::filesystem::path& file);
// Throws naming the file unless its state hash is `expected` (nothing when null): a caller
// that checked a file's header against a committed hash passes it to each later read, which
// checks it in its own open, so a file replaced in between is refused.
void require_state(const CheckpointInfo& info, const std::filesystem::path& file,
                   const Digest* expected);
// Streams the file and checks the state hash (and, version 3, the leaf table); throws naming the
// file when it does not match.
void verify_checkpoint(const std::filesystem::path& file, const Digest* expected = nullptr);
// A version-3 checkpoint's leaf table, checked against its state hash: what a partial read is
// checked against. Throws naming the file for version 2 or a table that does not match.
std::vector<Digest> read_leaf_table(std::ifstream& in, const CheckpointLayout& l,
                                    const std::filesystem::path& file);
// Checks the given leaves of a version-3 checkpoint against its leaf table (itself checked
// against the state hash) without reading the rest; returns the bytes read. A version-2 file has
// no table: it is read and checked whole.
uint64_t verify_checkpoint_leaves(const std::filesystem::path& file,
                                  const std::vector<uint64_t>& leaves,
                                  const Digest* expected = nullptr);
// The same checks as verify_checkpoint on a checkpoint's bytes in memory (tests and fuzzing).
CheckpointInfo parse_checkpoint(const std::string& bytes, const std::string& where);
// Removes the temporaries of checkpoint writes that never finished (a process killed while
// writing) from run_dir/checkpoints; a finished checkpoint is never one.
void remove_checkpoint_temporaries(const std::filesystem::path& run_dir);
// The checkpoint with the highest step in run_dir/checkpoints, if any.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& run_dir);

}  // namespace wit
