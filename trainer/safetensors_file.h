// The safetensors container (8-byte little-endian header length, JSON header, raw data), read
// without torch: the header parsed and every tensor's place checked against the file's size,
// so the tensor reader (trainer/safetensors.h) and the fuzzer share one parser.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wit {

struct SafetensorsEntry {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
};

struct SafetensorsIndex {
  std::vector<SafetensorsEntry> tensors;  // in header order
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // where the data section starts in the file
};

// `head` holds at least the file's first 8 + header-length bytes (or all of it); `file_size` is
// the whole file's. F32 tensors only. Errors name `where` and the fault.
SafetensorsIndex parse_safetensors_header(const std::string& head, uint64_t file_size,
                                          const std::string& where);

}  // namespace wit
