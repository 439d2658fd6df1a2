// The board's file store: uploads in pieces, resumed after a broken connection (a new store
// object on the same directory, as after a server restart), checked against the announced hash
// and size, and never visible before they are complete and correct.
#include "board/blob_store.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tests/data/temp_dir.h"

namespace wit::board {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

std::string bytes_of(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 131 + 7) % 251);
  return s;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(BlobStore, PiecesBecomeOneFileUnderItsHashOnlyWhenComplete) {
  TempDir dir;
  BlobStore store(dir.path());
  const std::string file = bytes_of(10'000);
  const Digest sha = sha256(file);
  EXPECT_EQ(store.begin(sha, file.size()), 0u);
  EXPECT_EQ(store.append(sha, 0, file.data(), 4000), 4000u);
  EXPECT_FALSE(store.has(sha));  // half an upload is not visible
  EXPECT_EQ(store.append(sha, 4000, file.data() + 4000, 6000), 10'000u);
  EXPECT_FALSE(store.path_of(sha));
  const auto path = store.finish(sha);
  EXPECT_EQ(read(path), file);
  EXPECT_EQ(store.path_of(sha), path);
  EXPECT_EQ(path.parent_path().filename().string(), to_hex(sha).substr(0, 2));
  // Uploading it again costs nothing: the store says it is all there.
  EXPECT_EQ(store.begin(sha, file.size()), file.size());
}

TEST(BlobStore, ABrokenUploadResumesWhereItStopped) {
  TempDir dir;
  const std::string file = bytes_of(5000);
  const Digest sha = sha256(file);
  {
    BlobStore store(dir.path());
    store.begin(sha, file.size());
    store.append(sha, 0, file.data(), 1234);
  }  // the server goes away
  BlobStore store(dir.path());
  const uint64_t at = store.begin(sha, file.size());
  EXPECT_EQ(at, 1234u);
  store.append(sha, at, file.data() + at, file.size() - at);
  EXPECT_EQ(read(store.finish(sha)), file);
}

TEST(BlobStore, PiecesOutOfPlaceOrPastTheSizeAreRefused) {
  TempDir dir;
  BlobStore store(dir.path(), 1 << 20);
  const std::string file = bytes_of(100);
  const Digest sha = sha256(file);
  store.begin(sha, 100);
  store.append(sha, 0, file.data(), 50);
  EXPECT_TRUE(contains(error_of([&] { store.append(sha, 40, file.data(), 10); }),
                       "a piece at byte 40, but the upload has reached byte 50"));
  EXPECT_TRUE(contains(error_of([&] { store.append(sha, 50, file.data(), 51); }),
                       "passes the announced size 100"));
  EXPECT_TRUE(contains(error_of([&] { store.finish(sha); }), "50 of 100 bytes received; send the rest from byte 50"));
  EXPECT_TRUE(contains(error_of([&] { store.begin(sha, 99); }), "announced as 100 bytes before, now as 99"));
  EXPECT_TRUE(contains(error_of([&] { store.begin(sha256("x"), 2 << 20); }), "over this board's limit"));
  EXPECT_TRUE(contains(error_of([&] { store.append(sha256("never"), 0, "a", 1); }), "no upload of this file was begun"));
}

TEST(BlobStore, ContentThatIsNotTheAnnouncedHashIsDiscarded) {
  TempDir dir;
  BlobStore store(dir.path());
  std::string file = bytes_of(3000);
  const Digest sha = sha256(file);
  file[1500] ^= 1;  // corrupted on the way
  store.begin(sha, file.size());
  store.append(sha, 0, file.data(), file.size());
  const std::string e = error_of([&] { store.finish(sha); });
  EXPECT_TRUE(contains(e, "hash to " + to_hex(sha256(file)))) << e;
  EXPECT_TRUE(contains(e, "not to the announced " + to_hex(sha))) << e;
  EXPECT_FALSE(store.has(sha));
  // Nothing of it stays: the next attempt starts from the beginning.
  EXPECT_EQ(store.begin(sha, file.size()), 0u);
}

}  // namespace
}  // namespace wit::board
