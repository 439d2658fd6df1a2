#include "core/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace wit {

void write_all(std::FILE* f, const void* data, size_t n, const fs::path& path) {
  if (n && std::fwrite(data, 1, n, f) != n)
    fail("cannot write {}: {}", path.string(), std::strerror(errno));
}

std::FILE* create_new_file(const fs::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    fail("cannot replace {}: {}", path.string(), std::strerror(errno));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create {}: {}", path.string(), std::strerror(errno));
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    fail("cannot create {}: {}", path.string(), std::strerror(err));
  }
  return f;
}

void write_file_atomic(const fs::path& path, const std::function<void(std::FILE*)>& write) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  std::FILE* f = create_new_file(tmp);
  try {
    write(f);
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0)
      fail("cannot write {}: {}", path.string(), std::strerror(errno));
  } catch (...) {
    std::fclose(f);
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  if (std::fclose(f) != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    fail("cannot write {}: {}", path.string(), std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail("cannot move {} into place: {}", path.string(), ec.message());
  }
}

void write_file_atomic(const fs::path& path, std::string_view contents) {
  write_file_atomic(path,
                    [&](std::FILE* f) { write_all(f, contents.data(), contents.size(), path); });
}

void require_regular_file(const fs::path& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) fail("{} {} cannot be read: no such file", what, path.string());
  if (ec) fail("{} {} cannot be read: {}", what, path.string(), ec.message());
  if (!fs::is_regular_file(st))
    fail("{} {} is not a regular file (a directory, FIFO or device is never read as one)", what,
         path.string());
}

bool path_inside(const fs::path& child, const fs::path& parent) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(child, ec), p = fs::weakly_canonical(parent, ec);
  if (ec) fail("cannot resolve {} or {}: {}", child.string(), parent.string(), ec.message());
  const auto [pi, ci] = std::mismatch(p.begin(), p.end(), c.begin(), c.end());
  (void)ci;
  return pi == p.end();
}

std::string read_text_file(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    fail("cannot read {}: not a regular file (a directory, FIFO or device is never read as one)",
         path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}: {}", path.string(), std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace wit
