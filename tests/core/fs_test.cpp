// Files written atomically, and never through a name someone else prepared.
#include "core/fs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "core/h5.h"
#include "tests/data/temp_dir.h"
#include "trainer/checkpoint_file.h"
#include "trainer/data/shard.h"

namespace wit {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

TEST(WriteFileAtomic, ReplacesTheFileWhole) {
  TempDir dir;
  write_file_atomic(dir / "a.json", "first");
  write_file_atomic(dir / "a.json", "second");
  EXPECT_EQ(read_text_file(dir / "a.json"), "second");
  EXPECT_FALSE(std::filesystem::exists(dir / ("a.json.tmp." + std::to_string(::getpid()))));
}

// A run directory handed over by someone else may hold links at the temporaries' names (they
// are predictable: the name and a process id): a certificate written there must not land in the
// file a link points to.
TEST(WriteFileAtomic, APlantedLinkAtTheTemporaryIsNotWrittenThrough) {
  TempDir dir;
  write_file_atomic(dir / "victim.txt", "precious");
  const std::filesystem::path tmp = dir / ("certificate.json.tmp." + std::to_string(::getpid()));
  std::filesystem::create_symlink(dir / "victim.txt", tmp);
  write_file_atomic(dir / "certificate.json", "{}");
  EXPECT_EQ(read_text_file(dir / "victim.txt"), "precious");
  EXPECT_EQ(read_text_file(dir / "certificate.json"), "{}");
  EXPECT_FALSE(std::filesystem::is_symlink(dir / "certificate.json"));

  std::filesystem::create_symlink(dir / "victim.txt", dir / "new.bin");
  std::FILE* f = create_new_file(dir / "new.bin");
  std::fputs("bytes", f);
  std::fclose(f);
  EXPECT_EQ(read_text_file(dir / "victim.txt"), "precious");
  EXPECT_EQ(read_text_file(dir / "new.bin"), "bytes");
}

// A FIFO where a file should be (easily shipped in a tar of a run or a corpus) would block its
// reader for ever: every reader refuses it instead. (alarm: a reader that blocks fails the test.)
TEST(RegularFiles, ReadersRefuseAFifoInsteadOfBlocking) {
  TempDir dir;
  const std::filesystem::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ::alarm(60);
  EXPECT_TRUE(contains(error_of([&] { read_text_file(fifo); }), "not a regular file"));
  EXPECT_TRUE(contains(error_of([&] { require_regular_file(fifo, "config"); }),
                       "config " + fifo.string() + " is not a regular file"));
  EXPECT_TRUE(contains(error_of([&] { read_checkpoint_info(fifo); }),
                       "checkpoint " + fifo.string() + " is not a regular file"));
  EXPECT_TRUE(contains(error_of([&] { data::Shard shard(fifo); }), "is not a regular file"));
  EXPECT_TRUE(contains(error_of([&] { h5::File::open_read(fifo); }), "not a regular file"));
  ::alarm(0);
  EXPECT_TRUE(contains(error_of([&] { require_regular_file(dir / "none", "log"); }),
                       "no such file"));
}

}  // namespace
}  // namespace wit
