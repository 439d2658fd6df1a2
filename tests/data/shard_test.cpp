// llm.c shards: the on-disk format, validation errors that name the problem, incremental
// writing, and token streams that read across shard boundaries.
#include "trainer/data/shard.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>

#include "core/error.h"
#include "tests/data/temp_dir.h"

namespace wit::data {
namespace {

using wit::testing::error_of;
using wit::testing::contains;
using wit::testing::TempDir;

std::vector<uint16_t> iota_tokens(size_t n, uint16_t start) {
  std::vector<uint16_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

void set_header_int(const fs::path& p, int index, int32_t value) {
  std::string bytes = file_bytes(p);
  std::memcpy(bytes.data() + 4 * index, &value, 4);
  write_bytes(p, bytes);
}


TEST(Shard, file_layout_is_llmc) {
  TempDir dir;
  fs::path p = dir / "a.bin";
  write_shard(p, {1, 2, 0xffff});
  std::string bytes = file_bytes(p);
  ASSERT_EQ(bytes.size(), 1024u + 6u);
  int32_t header[256];
  std::memcpy(header, bytes.data(), 1024);
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 3);
  for (int i = 3; i < 256; ++i) EXPECT_EQ(header[i], 0) << i;
  const unsigned char* t = reinterpret_cast<const unsigned char*>(bytes.data()) + 1024;
  EXPECT_EQ(t[0], 1);  // little-endian uint16
  EXPECT_EQ(t[1], 0);
  EXPECT_EQ(t[4], 0xff);
  EXPECT_EQ(t[5], 0xff);
}

TEST(Shard, write_then_read_round_trips) {
  TempDir dir;
  std::vector<uint16_t> tokens = iota_tokens(1000, 7);
  write_shard(dir / "a.bin", tokens);
  Shard s(dir / "a.bin");
  ASSERT_EQ(s.size(), tokens.size());
  EXPECT_EQ(std::vector<uint16_t>(s.tokens(), s.tokens() + s.size()), tokens);
  EXPECT_EQ(s.path(), dir / "a.bin");
}

TEST(Shard, empty_shard_is_valid) {
  TempDir dir;
  write_shard(dir / "e.bin", {});
  Shard s(dir / "e.bin");
  EXPECT_EQ(s.size(), 0u);
}

TEST(Shard, bad_magic_is_rejected_with_expected_and_found) {
  TempDir dir;
  fs::path p = dir / "bad.bin";
  write_shard(p, {1, 2, 3});
  set_header_int(p, 0, 12345);
  std::string msg = error_of([&] { Shard s(p); });
  EXPECT_TRUE(contains(msg, p.string())) << msg;
  EXPECT_TRUE(contains(msg, "magic number 12345, expected 20240520")) << msg;
}

TEST(Shard, wrong_version_is_rejected) {
  TempDir dir;
  fs::path p = dir / "v2.bin";
  write_shard(p, {1, 2, 3});
  set_header_int(p, 1, 2);
  std::string msg = error_of([&] { Shard s(p); });
  EXPECT_TRUE(contains(msg, "unsupported shard version 2")) << msg;
  EXPECT_TRUE(contains(msg, p.string())) << msg;
}

TEST(Shard, truncated_file_is_rejected) {
  TempDir dir;
  fs::path p = dir / "t.bin";
  write_shard(p, iota_tokens(10, 0));
  fs::resize_file(p, 1024 + 2 * 9 + 1);  // nine tokens and a half
  std::string msg = error_of([&] { Shard s(p); });
  EXPECT_TRUE(contains(msg, "truncated: header says 10 tokens, file holds 9")) << msg;
  EXPECT_TRUE(contains(msg, p.string())) << msg;
}

TEST(Shard, trailing_bytes_are_rejected) {
  TempDir dir;
  fs::path p = dir / "long.bin";
  write_shard(p, iota_tokens(10, 0));
  fs::resize_file(p, 1024 + 2 * 12);
  std::string msg = error_of([&] { Shard s(p); });
  EXPECT_TRUE(contains(msg, "header says 10 tokens")) << msg;
}

TEST(Shard, file_shorter_than_header_is_rejected) {
  TempDir dir;
  fs::path p = dir / "short.bin";
  write_bytes(p, "hello");
  std::string msg = error_of([&] { Shard s(p); });
  EXPECT_TRUE(contains(msg, "shorter than the 1024-byte header")) << msg;
}

TEST(Shard, missing_file_is_named) {
  TempDir dir;
  std::string msg = error_of([&] { Shard s(dir / "nope.bin"); });
  EXPECT_TRUE(contains(msg, "cannot open shard")) << msg;
  EXPECT_TRUE(contains(msg, "nope.bin")) << msg;
}

TEST(Shard, moves_keep_the_mapping) {
  TempDir dir;
  write_shard(dir / "a.bin", {5, 6});
  write_shard(dir / "b.bin", {7});
  Shard a(dir / "a.bin");
  Shard moved(std::move(a));
  EXPECT_EQ(a.size(), 0u);
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved.tokens()[1], 6);
  Shard b(dir / "b.bin");
  b = std::move(moved);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b.tokens()[0], 5);
}

TEST(ShardWriter, incremental_writes_match_whole_writes) {
  TempDir dir;
  std::vector<uint16_t> tokens = iota_tokens(300, 100);
  {
    ShardWriter w(dir / "inc.bin");
    w.append(tokens.data(), 100);
    w.append(tokens.data() + 100, 0);
    w.append(tokens.data() + 100, 200);
    EXPECT_EQ(w.size(), 300u);
    w.finish();
  }
  write_shard(dir / "whole.bin", tokens);
  EXPECT_EQ(file_bytes(dir / "inc.bin"), file_bytes(dir / "whole.bin"));
  EXPECT_EQ(sha256_file(dir / "inc.bin"), sha256(file_bytes(dir / "whole.bin")));
}

TEST(ShardWriter, unfinished_shard_is_deleted) {
  TempDir dir;
  {
    ShardWriter w(dir / "x.bin");
    uint16_t t = 1;
    w.append(&t, 1);
  }
  EXPECT_FALSE(fs::exists(dir / "x.bin"));
}

TEST(TokenStream, reads_across_shard_boundaries) {
  TempDir dir;
  std::vector<std::vector<uint16_t>> parts = {
      iota_tokens(5, 0), {}, iota_tokens(7, 5), iota_tokens(1, 12), {}};
  std::vector<fs::path> paths;
  std::vector<uint16_t> all;
  for (size_t i = 0; i < parts.size(); ++i) {
    paths.push_back(dir / ("s" + std::to_string(i) + ".bin"));
    write_shard(paths.back(), parts[i]);
    all.insert(all.end(), parts[i].begin(), parts[i].end());
  }
  TokenStream stream(paths);
  ASSERT_EQ(stream.size(), all.size());
  EXPECT_EQ(stream.shards().size(), parts.size());
  EXPECT_EQ(stream.shard_offset(2), 5u);
  EXPECT_EQ(stream.shard_offset(3), 12u);
  // Every window of every length.
  for (uint64_t off = 0; off <= all.size(); ++off) {
    for (uint64_t n = 0; off + n <= all.size(); ++n) {
      std::vector<uint16_t> out(n, 0xdead);
      stream.read(off, n, out.data());
      ASSERT_EQ(out, std::vector<uint16_t>(all.begin() + off, all.begin() + off + n))
          << "offset " << off << " n " << n;
    }
  }
}

TEST(TokenStream, out_of_range_reads_throw) {
  TempDir dir;
  write_shard(dir / "a.bin", iota_tokens(4, 0));
  write_shard(dir / "b.bin", iota_tokens(4, 4));
  TokenStream stream({dir / "a.bin", dir / "b.bin"});
  std::vector<uint16_t> out(16);
  std::string msg = error_of([&] { stream.read(5, 4, out.data()); });
  EXPECT_TRUE(contains(msg, "cannot read tokens [5, 9)")) << msg;
  EXPECT_TRUE(contains(msg, "8 tokens")) << msg;
  EXPECT_THROW(stream.read(9, 0, out.data()), Error);
  EXPECT_THROW(stream.read(UINT64_MAX, 2, out.data()), Error);
  EXPECT_NO_THROW(stream.read(8, 0, out.data()));
  TokenStream empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_THROW(empty.read(0, 1, out.data()), Error);
}

TEST(TokenStream, a_bad_shard_fails_the_stream_with_its_path) {
  TempDir dir;
  write_shard(dir / "good.bin", iota_tokens(4, 0));
  write_bytes(dir / "bad.bin", std::string(2000, 'x'));
  std::string msg = error_of([&] { TokenStream s({dir / "good.bin", dir / "bad.bin"}); });
  EXPECT_TRUE(contains(msg, (dir / "bad.bin").string())) << msg;
}

}  // namespace
}  // namespace wit::data
