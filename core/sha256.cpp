#include "core/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace wit {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    fail("OpenSSL: cannot initialise SHA-256");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256& Sha256::update(const void* data, size_t n) {
  if (n && EVP_DigestUpdate(ctx_->md, data, n) != 1) fail("OpenSSL: SHA-256 update failed");
  return *this;
}

Sha256& Sha256::update_u64(uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = uint8_t(v >> (8 * i));
  return update(b, 8);
}

Digest Sha256::finish() {
  Digest d{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, d.data(), &len) != 1 || len != d.size())
    fail("OpenSSL: SHA-256 final failed");
  return d;
}

Digest sha256(const void* data, size_t n) { return Sha256().update(data, n).finish(); }

Digest sha256_file(const std::filesystem::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("cannot read {}: {}", path.string(), std::strerror(errno));
  Sha256 hasher;
  std::vector<char> buffer(1 << 20);
  size_t got;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), f)) > 0)
    hasher.update(buffer.data(), got);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) fail("cannot read {}: read error", path.string());
  return hasher.finish();
}

std::string to_hex(const uint8_t* data, size_t n) {
  static const char* k = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = k[data[i] >> 4];
    s[2 * i + 1] = k[data[i] & 15];
  }
  return s;
}

Digest digest_from_hex(std::string_view hex, std::string_view what) {
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Digest d{};
  if (hex.size() != 64) fail("{}: expected 64 hex digits, got {} characters", what, hex.size());
  for (size_t i = 0; i < 32; ++i) {
    int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) fail("{}: '{}' is not a hex digest", what, hex);
    d[i] = uint8_t(hi << 4 | lo);
  }
  return d;
}

uint64_t digest_prefix_u64(const Digest& d) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | d[i];
  return v;
}

}  // namespace wit
