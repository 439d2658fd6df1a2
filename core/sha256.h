// SHA-256 (OpenSSL EVP) with an incremental hasher and hex helpers.
// Every commitment in wit (documents, batches, checkpoints, records) is a SHA-256 digest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace wit {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  Sha256& update(const void* data, size_t n);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  // Fixed-width little-endian integers, so digests do not depend on the host.
  Sha256& update_u64(uint64_t v);
  Digest finish();  // the hasher may not be updated afterwards

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

Digest sha256(const void* data, size_t n);
inline Digest sha256(std::string_view s) { return sha256(s.data(), s.size()); }
// SHA-256 of a whole file's bytes, read in chunks (shards and models can be gigabytes).
Digest sha256_file(const std::filesystem::path& path);

std::string to_hex(const uint8_t* data, size_t n);
inline std::string to_hex(const Digest& d) { return to_hex(d.data(), d.size()); }
// Throws wit::Error naming `what` when `hex` is not 64 hex digits.
Digest digest_from_hex(std::string_view hex, std::string_view what);

// First 8 bytes of a digest as a little-endian integer: a seed derived from a hash.
uint64_t digest_prefix_u64(const Digest& d);

}  // namespace wit
