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

// Creates `path` anew and opens it for writing ("wb"). Whatever had that name (a stale
// temporary, or a link planted in a directory someone else handed over) is removed first, and
// the file is created with O_EXCL | O_NOFOLLOW, so the bytes never land anywhere else.
std::FILE* create_new_file(const fs::path& path);

// Writes all n bytes or throws an Error naming `path`.
void write_all(std::FILE* f, const void* data, size_t n, const fs::path& path);

// The whole file. Only a regular file is read (links followed): a FIFO would block for ever.
std::string read_text_file(const fs::path& path);

// Throws unless `path` is a regular file (links followed), naming it as `what` ("checkpoint
// step_4.ckpt is not a regular file"): a FIFO would block its reader, a device never end.
void require_regular_file(const fs::path& path, const std::string& what);

// Whether `child` is `parent` or below it, both resolved (links followed, ".." gone).
bool path_inside(const fs::path& child, const fs::path& parent);

}  // namespace wit
