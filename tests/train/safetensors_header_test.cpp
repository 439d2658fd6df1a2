// The safetensors header as a model file from elsewhere gives it: each tensor's place checked,
// and the tensors tiling the data section once.
#include "trainer/safetensors_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "tests/data/temp_dir.h"

namespace wit {
namespace {

using wit::testing::contains;
using wit::testing::error_of;

// A file's first bytes: the header's length, then `json`; the data section is `data_bytes`.
std::string head(const std::string& json) {
  const uint64_t n = json.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + json;
}

SafetensorsIndex parse(const std::string& json, uint64_t data_bytes) {
  const std::string h = head(json);
  return parse_safetensors_header(h, h.size() + data_bytes, "m.safetensors");
}

TEST(SafetensorsHeader, TensorsTilingTheDataAreRead) {
  const auto index = parse(R"({"__metadata__": {"format": "pt"},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]},
      "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}})",
                           24);
  ASSERT_EQ(index.tensors.size(), 2u);
  EXPECT_EQ(index.tensors[0].name, "b");  // header order
  EXPECT_EQ(index.metadata.at("format"), "pt");
}

// Overlapping tensors would each be allocated and read: a thousand over one range cost a
// thousand times the file's size in memory.
TEST(SafetensorsHeader, OverlapsAndHolesAreRefused) {
  std::string many = "{";
  for (int i = 0; i < 1000; ++i)
    many += (i ? "," : "") + std::string("\"t") + std::to_string(i) +
            R"(": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]})";
  many += "}";
  std::string msg = error_of([&] { parse(many, 16); });
  EXPECT_TRUE(contains(msg, "begins at data byte 0, where the tensors before it end at 16: the "
                            "tensors must cover the data section once"))
      << msg;
  msg = error_of([&] {
    parse(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
              "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
          12);
  });
  EXPECT_TRUE(contains(msg, "tensor b begins at data byte 8, where the tensors before it end at 4"))
      << msg;
  msg = error_of([&] { parse(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8); });
  EXPECT_TRUE(contains(msg, "the tensors cover 4 of the data section's 8 bytes")) << msg;
}

TEST(SafetensorsHeader, NestingWithoutEndIsNotJson) {
  const std::string deep = "{\"__metadata__\": " + std::string(100'000, '[') +
                           std::string(100'000, ']') + "}";
  EXPECT_TRUE(contains(error_of([&] { parse(deep, 0); }), "is not JSON (or nests deeper than"));
}

}  // namespace
}  // namespace wit
