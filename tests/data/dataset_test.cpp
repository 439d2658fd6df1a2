// Opening a prepared dataset: a missing manifest, damaged shards, and document records checked
// against the tokens they name (what wit verify's structure stage runs).
#include "trainer/data/dataset.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "core/error.h"
#include "tests/data/corpus_files.h"
#include "tests/data/temp_dir.h"
#include "trainer/data/manifest.h"
#include "trainer/data/prepare.h"
#include "trainer/data/shard.h"
#include "trainer/data/tokenizer.h"

namespace wit::data {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::join_with_separators;
using wit::testing::numbered_documents;
using wit::testing::TempDir;
using wit::testing::write_text;

TEST(Dataset, missing_manifest_says_run_prepare) {
  TempDir dir;
  std::string msg = error_of([&] { Dataset::open(dir.path()); });
  EXPECT_TRUE(contains(
      msg, dir.path().string() + " is not a prepared dataset (no manifest.h5); run wit prepare"))
      << msg;
}

TEST(Dataset, damaged_shards_are_caught) {
  TempDir dir;
  write_text(dir / "c.txt", join_with_separators(numbered_documents(20)));
  PrepareOptions o;
  o.input = dir / "c.txt";
  o.out = dir / "out";
  o.val_fraction = 0.0;
  prepare(o);
  fs::path shard = dir / "out/train_000000.bin";
  uint64_t size = fs::file_size(shard);

  // Same size, one token changed: only the hash check sees it.
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1024 + 10);
    f.put('#');
  }
  Dataset data = Dataset::open(dir / "out");
  std::string msg = error_of([&] { data.verify_shard_hashes(); });
  EXPECT_TRUE(contains(msg, shard.string() + ": SHA-256")) << msg;
  EXPECT_TRUE(contains(msg, "changed after prepare")) << msg;

  fs::resize_file(shard, size - 3);
  msg = error_of([&] { Dataset::open(dir / "out"); });
  EXPECT_TRUE(contains(msg, shard.string() + ": truncated")) << msg;

  // A valid shard of the wrong length.
  write_shard(shard, {kByteEot, 'a'});
  msg = error_of([&] { Dataset::open(dir / "out"); });
  EXPECT_TRUE(contains(msg, shard.string() + ": holds 2 tokens but")) << msg;

  fs::remove(shard);
  msg = error_of([&] { Dataset::open(dir / "out"); });
  EXPECT_TRUE(contains(msg, "cannot open shard " + shard.string())) << msg;
}

// wit query answers from the records alone, so the verifier checks each against the tokens it
// names. Every lie below is a manifest that validates (its root recomputed), as a trainer who
// prepared the data would write it, and each one is refused.
TEST(Dataset, document_records_must_say_what_was_trained) {
  TempDir dir;
  // Tokens [0, 7): EOT "alpha\n"; [7, 20): EOT "beta\r gamma\n"; [20, 27): EOT "delta\n".
  write_text(dir / "c.txt", join_with_separators({"alpha\n", "beta\r gamma\n", "delta\n"}));
  PrepareOptions o;
  o.input = dir / "c.txt";
  o.out = dir / "out";
  o.val_fraction = 0.0;
  prepare(o);
  Dataset::open(dir / "out").verify_documents();
  const fs::path manifest_file = dir / "out" / kManifestFile;
  const Manifest honest = read_manifest(manifest_file);
  auto refusal = [&](const std::function<void(Manifest&)>& edit) {
    Manifest m = honest;
    edit(m);
    m.root = manifest_root(m);
    write_manifest(manifest_file, m);
    const std::string msg = error_of([&] { Dataset::open(dir / "out").verify_documents(); });
    write_manifest(manifest_file, honest);
    return msg;
  };
  auto renumber = [](Manifest& m) {
    for (size_t i = 0; i < m.documents.size(); ++i) m.documents[i].id = i;
  };

  // Recorded under another document's hash: a query for it would say not-in-dataset.
  std::string msg = refusal([](Manifest& m) { m.documents[1].sha256 = sha256("beta gamma\n"); });
  EXPECT_TRUE(contains(msg, "document 1 (train split, tokens 7 to 20): its tokens decode to text "
                            "of SHA-256 " + to_hex(sha256("beta\r gamma\n"))))
      << msg;
  EXPECT_TRUE(contains(msg, "the record does not say what was trained")) << msg;
  // Shared among a verifier's processes, the part holding a lying record finds it, and the
  // others still check that the records cover the split.
  {
    Manifest m = honest;
    m.documents[1].sha256 = sha256("beta gamma\n");
    m.root = manifest_root(m);
    write_manifest(manifest_file, m);
    const Dataset data = Dataset::open(dir / "out");
    EXPECT_TRUE(contains(error_of([&] { data.verify_documents({}, 1, 2); }), "document 1 "));
    EXPECT_EQ(data.verify_documents({}, 0, 2), 0u);  // documents 0 and 2 say what was trained
    EXPECT_TRUE(contains(error_of([&] { data.verify_documents({}, 2, 2); }), "part 2 of 2"));
    m = honest;
    m.documents[2].offset += 1;
    m.documents[2].length -= 1;
    m.root = manifest_root(m);
    write_manifest(manifest_file, m);
    EXPECT_TRUE(contains(error_of([&] { Dataset::open(dir / "out").verify_documents({}, 1, 2); }),
                         "document 2 (train split, tokens 21 to 27): leaves a gap"));
    write_manifest(manifest_file, honest);
  }
  // Two documents as one record: the second has no record of its own.
  msg = refusal([&](Manifest& m) {
    m.documents[0].length += m.documents[1].length;
    m.documents[0].sha256 = sha256(std::string("alpha\nbeta\r gamma\n"));
    m.documents.erase(m.documents.begin() + 1);
    renumber(m);
  });
  EXPECT_TRUE(contains(msg, "document 0 (train split, tokens 0 to 20): holds the end-of-text "
                            "token at its token 7: one record covers two documents"))
      << msg;
  // A record moved off its document: a gap, and an overlap.
  msg = refusal([](Manifest& m) {
    m.documents[2].offset += 1;
    m.documents[2].length -= 1;
  });
  EXPECT_TRUE(contains(msg, "document 2 (train split, tokens 21 to 27): leaves a gap where the "
                            "records before it end at token 20"))
      << msg;
  msg = refusal([](Manifest& m) {
    m.documents[2].offset -= 1;
    m.documents[2].length += 1;
  });
  EXPECT_TRUE(contains(msg, "document 2 (train split, tokens 19 to 27): overlaps them")) << msg;
  // A record dropped: its tokens are trained but in no record.
  msg = refusal([&](Manifest& m) { m.documents.pop_back(); });
  EXPECT_TRUE(contains(msg, "the train split's records cover its first 20 tokens of 27")) << msg;

  // Text no canonical document holds: "beta\r\ngamma\n" (the space turned into a line feed in
  // the shard, its hash and the record's made to match), which no query could hash to.
  const fs::path shard = dir / "out" / honest.shards[0].file;
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1024 + 2 * 13);  // token 13: the space after "\r"
    f.put('\n');
  }
  msg = refusal([&](Manifest& m) {
    m.shards[0].sha256 = sha256_file(shard);
    m.documents[1].sha256 = sha256(std::string("beta\r\ngamma\n"));
  });
  EXPECT_TRUE(contains(msg, "document 1 (train split, tokens 7 to 20): its text holds \"\\r\\n\" "
                            "(at token 6)"))
      << msg;
}

}  // namespace
}  // namespace wit::data
