#include "core/fs.h"

#include <unistd.h>

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

void write_file_atomic(const fs::path& path, const std::function<void(std::FILE*)>& write) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail("cannot create {}: {}", tmp.string(), std::strerror(errno));
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

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}: {}", path.string(), std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace wit
