// Shared by the fuzz targets: an input as a file (for readers that take a path), and the rule
// that a reader may refuse an input with an exception but must never crash, hang or leak
// memory out of bounds.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

namespace wit::fuzz {

// The input written to a file of this process's own, removed when this goes away.
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size, const char* suffix)
      : path_(std::filesystem::temp_directory_path() /
              ("wit-fuzz-" + std::to_string(::getpid()) + suffix)) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
  }
  ~InputFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs a reader on one input: a refusal (any exception) is a fine answer; anything else that
// goes wrong (a crash, a sanitizer report, a time-out) is a finding.
template <typename Fn>
int refuse_or_accept(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception&) {
  }
  return 0;
}

}  // namespace wit::fuzz
