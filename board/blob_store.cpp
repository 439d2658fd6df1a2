#include "board/blob_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/fs.h"

namespace wit::board {

namespace fs = std::filesystem;

namespace {

void sync_path(const fs::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail("cannot open {} to sync it: {}", p.string(), std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail("cannot sync {}: {}", p.string(), std::strerror(err));
}

uint64_t size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : uint64_t(n);
}

// Names come from digests alone (hex): no client text ever becomes a path.
std::string partial_name(const Digest& sha, const std::string& owner) {
  return to_hex(sha) + (owner.empty() ? "" : "." + to_hex(sha256(owner)).substr(0, 16));
}

}  // namespace

BlobStore::BlobStore(fs::path dir, uint64_t max_size) : dir_(std::move(dir)), max_size_(max_size) {
  std::error_code ec;
  fs::create_directories(dir_ / "blobs", ec);
  if (!ec) fs::create_directories(dir_ / "partial", ec);
  if (ec) fail("cannot create the file store in {}: {}", dir_.string(), ec.message());
}

fs::path BlobStore::partial_path(const Digest& sha, const std::string& owner) const {
  return dir_ / "partial" / (partial_name(sha, owner) + ".part");
}
fs::path BlobStore::size_path(const Digest& sha, const std::string& owner) const {
  return dir_ / "partial" / (partial_name(sha, owner) + ".size");
}
fs::path BlobStore::blob_path(const Digest& sha) const {
  const std::string h = to_hex(sha);
  return dir_ / "blobs" / h.substr(0, 2) / h.substr(2);
}

bool BlobStore::has(const Digest& sha) const { return fs::exists(blob_path(sha)); }

std::optional<fs::path> BlobStore::path_of(const Digest& sha) const {
  if (!has(sha)) return std::nullopt;
  return blob_path(sha);
}

uint64_t BlobStore::begin(const Digest& sha, uint64_t size, const std::string& owner) {
  const std::string h = to_hex(sha);
  if (size > max_size_)
    fail("upload {}: {} bytes is over this board's limit of {}", h.substr(0, 16), size, max_size_);
  if (has(sha)) {
    const uint64_t have = size_or_zero(blob_path(sha));
    if (have != size)
      fail("upload {}: announced as {} bytes, but the file with that hash has {}", h.substr(0, 16),
           size, have);
    return size;
  }
  if (fs::exists(size_path(sha, owner))) {
    const uint64_t announced = std::stoull(read_text_file(size_path(sha, owner)));
    if (announced != size)
      fail("upload {}: announced as {} bytes before, now as {}", h.substr(0, 16), announced, size);
    return size_or_zero(partial_path(sha, owner));
  }
  write_file_atomic(size_path(sha, owner), std::to_string(size));
  std::ofstream(partial_path(sha, owner), std::ios::binary | std::ios::app);
  return size_or_zero(partial_path(sha, owner));
}

uint64_t BlobStore::append(const Digest& sha, uint64_t offset, const void* data, size_t n,
                          const std::string& owner) {
  const std::string h = to_hex(sha);
  if (!fs::exists(size_path(sha, owner))) fail("upload {}: no upload of this file was begun", h.substr(0, 16));
  const uint64_t size = std::stoull(read_text_file(size_path(sha, owner)));
  const uint64_t at = size_or_zero(partial_path(sha, owner));
  if (offset != at)
    fail("upload {}: a piece at byte {}, but the upload has reached byte {}", h.substr(0, 16),
         offset, at);
  if (n > size - at)
    fail("upload {}: a piece of {} bytes at byte {} passes the announced size {}", h.substr(0, 16),
         n, at, size);
  const int fd = ::open(partial_path(sha, owner).c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) fail("upload {}: cannot open its partial file: {}", h.substr(0, 16), std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      // A short write leaves the partial file where the upload really is: the client asks again.
      fail("upload {}: writing at byte {}: {}", h.substr(0, 16), at + done, std::strerror(err));
    }
    done += size_t(w);
  }
  ::close(fd);
  return at + n;
}

uint64_t BlobStore::announced_size(const Digest& sha, const std::string& owner) const {
  if (has(sha)) return size_or_zero(blob_path(sha));
  if (!fs::exists(size_path(sha, owner)))
    fail("upload {}: no upload of this file was begun", to_hex(sha).substr(0, 16));
  return std::stoull(read_text_file(size_path(sha, owner)));
}

void BlobStore::abandon(const Digest& sha, const std::string& owner) {
  std::error_code ec;
  fs::remove(partial_path(sha, owner), ec);
  fs::remove(size_path(sha, owner), ec);
}

fs::path BlobStore::finish(const Digest& sha, const std::string& owner) {
  const std::string h = to_hex(sha);
  if (has(sha)) {  // another owner published it first: this copy is not needed
    abandon(sha, owner);
    return blob_path(sha);
  }
  if (!fs::exists(size_path(sha, owner))) fail("upload {}: no upload of this file was begun", h.substr(0, 16));
  const uint64_t size = std::stoull(read_text_file(size_path(sha, owner)));
  const fs::path part = partial_path(sha, owner);
  const uint64_t at = size_or_zero(part);
  if (at != size)
    fail("upload {}: {} of {} bytes received; send the rest from byte {}", h.substr(0, 16), at,
         size, at);
  Sha256 hasher;
  {
    std::ifstream in(part, std::ios::binary);
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), std::streamsize(buf.size()));
      hasher.update(buf.data(), size_t(in.gcount()));
    }
  }
  const Digest got = hasher.finish();
  if (got != sha) {
    std::error_code ec;
    fs::remove(part, ec);
    fs::remove(size_path(sha, owner), ec);
    fail("upload {}: the {} bytes received hash to {}, not to the announced {}; discarded",
         h.substr(0, 16), size, to_hex(got), h);
  }
  const fs::path blob = blob_path(sha);
  fs::create_directories(blob.parent_path());
  sync_path(part, O_RDONLY);
  fs::rename(part, blob);
  sync_path(blob.parent_path(), O_RDONLY | O_DIRECTORY);
  std::error_code ec;
  fs::remove(size_path(sha, owner), ec);
  return blob;
}

void BlobStore::remove(const Digest& sha) {
  std::error_code ec;
  fs::remove(blob_path(sha), ec);
  if (ec) fail("cannot remove {} from the file store: {}", to_hex(sha).substr(0, 16), ec.message());
}

}  // namespace wit::board
