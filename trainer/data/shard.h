// llm.c token shards (.bin): a header of 256 little-endian int32 {magic 20240520, version 1,
// n_tokens, 0...} followed by n_tokens little-endian uint16 tokens. Read through mmap.
//
//   write_shard("train_000000.bin", tokens);
//   TokenStream train({"train_000000.bin", "train_000001.bin"});
//   std::vector<uint16_t> window(1025);
//   train.read(offset, window.size(), window.data());  // may span two shards
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/sha256.h"

namespace wit::data {

namespace fs = std::filesystem;

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;  // llm.c: 1 = uint16 tokens (2 = uint32, not read here)
constexpr size_t kShardHeaderBytes = 256 * sizeof(int32_t);
// The header stores the token count as an int32.
constexpr uint64_t kShardMaxTokens = 0x7fffffff;

// Writes a whole shard atomically (temporary file, fsync, rename).
void write_shard(const fs::path& path, const std::vector<uint16_t>& tokens);

// Writes a shard incrementally, so a shard of 10^8 tokens never sits in memory. The header is
// written with the final count by finish(); a writer destroyed before finish() deletes its file.
class ShardWriter {
 public:
  explicit ShardWriter(const fs::path& path);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void append(const uint16_t* tokens, size_t n);
  uint64_t size() const { return tokens_; }
  const fs::path& path() const { return path_; }
  void finish();  // final header, flush, fsync, close

 private:
  fs::path path_;
  std::FILE* file_ = nullptr;
  uint64_t tokens_ = 0;
};

// One shard, mapped read-only. The constructor checks the header and the file size, and
// throws wit::Error naming the file otherwise (missing, bad magic, version, truncated).
class Shard {
 public:
  explicit Shard(const fs::path& path);
  ~Shard();
  Shard(Shard&& other) noexcept;
  Shard& operator=(Shard&& other) noexcept;
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  uint64_t size() const { return tokens_; }
  const uint16_t* tokens() const { return data_; }
  const fs::path& path() const { return path_; }

 private:
  void unmap();
  fs::path path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint16_t* data_ = nullptr;
  uint64_t tokens_ = 0;
};

// Shards concatenated into one sequence addressed by global token offset.
class TokenStream {
 public:
  TokenStream() = default;
  explicit TokenStream(const std::vector<fs::path>& shards);
  explicit TokenStream(std::vector<Shard> shards);

  uint64_t size() const { return size_; }
  // Copies tokens [offset, offset + n) into out, across shard boundaries; throws wit::Error
  // when the range does not lie within the stream.
  void read(uint64_t offset, uint64_t n, uint16_t* out) const;

  const std::vector<Shard>& shards() const { return shards_; }
  // Global offset of shard i's first token.
  uint64_t shard_offset(size_t i) const { return starts_.at(i); }

 private:
  std::vector<Shard> shards_;
  std::vector<uint64_t> starts_;
  uint64_t size_ = 0;
};


}  // namespace wit::data
