// Files written so that a crash or a failed run never leaves a half-written result:
// write to a temporary beside the target, fsync, then rename over it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace wit {

namespace fs = std::filesystem;

// Calls `write(std::FILE*)` on a temporary file, flushes and fsyncs it, then renames it to `path`.
// On any failure the temporary is removed and `path` is left as it was.
void write_file_atomic(const fs::path& path, const std::function<void(std::FILE*)>& write);
void write_file_atomic(const fs::path& path, std::string_view contents);

// Writes all n bytes or throws an Error naming `path`.
void write_all(std::FILE* f, const void* data, size_t n, const fs::path& path);

std::string read_text_file(const fs::path& path);

}  // namespace wit
