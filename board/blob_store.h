// The board's file store: every uploaded file (witness log, config, checkpoint, model) kept
// once, under its SHA-256, and uploads that survive a broken connection.
//
// An upload is announced with the content hash and size it will have; its bytes arrive in
// pieces, each at the offset the upload has reached (a client that lost its connection asks
// for that offset and goes on from there). Pieces live under partial/ until the last one:
// then the whole file is hashed, and only a file of the announced size and hash is moved
// (fsynced, renamed) to blobs/ab/cdef..., where readers find it. A file is therefore either
// complete and correct or not visible at all, whatever happens to the server in between.
//
//   BlobStore store("board-files");
//   store.begin(sha, size);                      // idempotent; returns the offset reached
//   store.append(sha, 0, piece.data(), piece.size());
//   store.finish(sha);                           // checks size and hash, publishes
//   store.path_of(sha);                          // blobs/... once published
//
// Unfinished uploads are kept per owner (the board: per participant), so nobody can announce
// another's file with a wrong size, or append to it, and so spoil it; only the published file,
// checked against its hash, is shared. Calls for one upload are serialized by the caller (the
// server holds a lock per upload); different uploads may proceed at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/sha256.h"

namespace wit::board {

class BlobStore {
 public:
  // Creates DIR/blobs and DIR/partial as needed.
  explicit BlobStore(std::filesystem::path dir, uint64_t max_size = uint64_t(1) << 42);

  bool has(const Digest& sha) const;
  // The published file; nullopt while it is not (complete and checked).
  std::optional<std::filesystem::path> path_of(const Digest& sha) const;

  // Announces an upload of `size` bytes hashing to `sha`; returns how many bytes it already
  // holds (0 for a new one, `size` when the file is already published). Announcing the same
  // hash with another size is refused.
  uint64_t begin(const Digest& sha, uint64_t size, const std::string& owner = "");
  // Adds bytes at `offset`, which must be where the upload is (the value begin returned, or
  // the end of the last piece); returns the new offset. Nothing past the announced size.
  uint64_t append(const Digest& sha, uint64_t offset, const void* data, size_t n,
                  const std::string& owner = "");
  // Publishes a complete upload after checking its size and SHA-256. A mismatch deletes the
  // partial file and throws, naming both hashes.
  std::filesystem::path finish(const Digest& sha, const std::string& owner = "");
  // The size an upload was announced with (begin), or the published file's size.
  uint64_t announced_size(const Digest& sha, const std::string& owner = "") const;
  // Drops an unfinished upload's bytes (nothing when there are none or the file is published):
  // a later begin starts it again from byte 0.
  void abandon(const Digest& sha, const std::string& owner = "");
  // Removes a published file (the board drops one that no entry came to use); a reader that
  // opened it before keeps reading it.
  void remove(const Digest& sha);

 private:
  std::filesystem::path partial_path(const Digest& sha, const std::string& owner) const;
  std::filesystem::path size_path(const Digest& sha, const std::string& owner) const;
  std::filesystem::path blob_path(const Digest& sha) const;

  std::filesystem::path dir_;
  uint64_t max_size_;
};

}  // namespace wit::board
