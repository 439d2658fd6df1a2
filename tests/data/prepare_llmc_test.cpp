// wit prepare of llm.c shards: records of end-of-text delimited documents over the original
// shards, GPT-2's encoding of their text, the vocabulary, and a manifest relabelled to hide them.
#include "trainer/data/prepare.h"

#include <gtest/gtest.h>

#include <tuple>

#include "core/error.h"
#include "tests/data/corpus_files.h"
#include "tests/data/prepared_dataset.h"
#include "tests/data/temp_dir.h"
#include "trainer/data/dataset.h"
#include "trainer/data/manifest.h"
#include "trainer/data/shard.h"
#include "trainer/data/split.h"

namespace wit::data {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;
using wit::testing::write_text;

// ---------------------------------------------------------------------------------------------
// prepare: llm.c shards

constexpr uint16_t kEot = 50256;

TEST(Prepare, llmc_shards_become_eot_delimited_documents) {
  TempDir dir;
  fs::create_directories(dir / "in");
  // Train stream: [EOT 1 2] [EOT 3 | 4 5] [EOT] [EOT 6]   ("|" = shard boundary)
  write_shard(dir / "in/fw_train_000001.bin", {kEot, 1, 2, kEot, 3});
  write_shard(dir / "in/fw_train_000002.bin", {4, 5, kEot, kEot, 6});
  write_shard(dir / "in/fw_val_000000.bin", {kEot, 32, 1263, 3290, kEot, 50255});  // "A big dog"
  PrepareOptions o;
  o.input = dir / "in";
  o.out = dir / "out";
  PrepareReport r = prepare(o);
  EXPECT_EQ(r.format, "llmc");
  EXPECT_EQ(r.documents, 6u);
  EXPECT_EQ(r.train_documents, 4u);
  EXPECT_EQ(r.val_documents, 2u);
  EXPECT_EQ(r.train_tokens, 10u);
  EXPECT_EQ(r.val_tokens, 6u);
  check_consistent(dir / "out", r);

  Dataset data = Dataset::open(dir / "out");
  const Manifest& m = data.manifest();
  EXPECT_EQ(m.tokenizer, "external");
  EXPECT_EQ(m.vocab_size, 50257);
  EXPECT_EQ(data.eot_token(), 50256);
  EXPECT_EQ(m.split_rule, "llmc-file-name");
  ASSERT_EQ(m.shards.size(), 3u);
  EXPECT_EQ(m.shards[0].file, "fw_train_000001.bin");
  EXPECT_EQ(m.shards[1].file, "fw_train_000002.bin");
  EXPECT_EQ(m.shards[2].file, "fw_val_000000.bin");
  EXPECT_EQ(m.shards[2].split, kSplitVal);

  struct Expected {
    uint8_t split;
    uint32_t shard;
    uint64_t offset;
    std::vector<uint16_t> tokens;
  };
  std::vector<Expected> expected = {
      {kSplitTrain, 0, 0, {kEot, 1, 2}},  {kSplitTrain, 0, 3, {kEot, 3, 4, 5}},
      {kSplitTrain, 1, 2, {kEot}},        {kSplitTrain, 1, 3, {kEot, 6}},
      {kSplitVal, 2, 0, {kEot, 32, 1263, 3290}}, {kSplitVal, 2, 4, {kEot, 50255}},
  };
  ASSERT_EQ(m.documents.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const DocumentEntry& d = m.documents[i];
    EXPECT_EQ(d.id, i);
    EXPECT_EQ(d.split, expected[i].split) << i;
    EXPECT_EQ(d.shard, expected[i].shard) << i;
    EXPECT_EQ(d.offset, expected[i].offset) << i;
    EXPECT_EQ(d.length, expected[i].tokens.size()) << i;
    // Canonical bytes: the span's tokens as little-endian uint16.
    std::string bytes;
    for (uint16_t t : expected[i].tokens) bytes += char(t & 0xff), bytes += char(t >> 8);
    EXPECT_EQ(d.sha256, sha256(bytes)) << i;
    std::vector<uint16_t> read(d.length);
    data.split(d.split).read(data.stream_offset(d), d.length, read.data());
    EXPECT_EQ(read, expected[i].tokens) << i;
  }
  // The shards in `out` are the originals, byte for byte.
  EXPECT_EQ(sha256_file(dir / "out/fw_train_000002.bin"),
            sha256_file(dir / "in/fw_train_000002.bin"));
  data.verify_documents();

  // A split whose first shard begins mid-document: its first record holds that part.
  write_shard(dir / "in/fw_train_000001.bin", {1, 2, kEot, 3});
  o.force = true;
  prepare(o);
  EXPECT_EQ(Dataset::open(dir / "out").verify_documents(), 2u);  // no text query finds them
}

// The tokenizer label decides how wit query hashes text, and only gpt2's is in the layout: an
// llm.c manifest relabelled byte (or a byte one relabelled external) keeps its root and layout,
// so the label is checked against the first record of each split, from hashed shards.
TEST(Prepare, a_relabelled_manifest_is_refused_before_any_query) {
  TempDir dir;
  fs::create_directories(dir / "in");
  write_shard(dir / "in/fw_train_000001.bin", {kEot, 15496, 995, kEot, 15496});
  write_shard(dir / "in/fw_val_000000.bin", {kEot, 995});
  write_text(dir / "docs.jsonl", "{\"text\": \"a\"}\n{\"text\": \"bb\"}\n{\"text\": \"ccc\"}\n");
  PrepareOptions o;
  o.input = dir / "in";
  o.out = dir / "llmc";
  prepare(o);
  o.input = dir / "docs.jsonl";
  o.out = dir / "bytes";
  prepare(o);
  for (const auto& [name, label, vocab, eot] :
       {std::tuple<std::string, std::string, int, int>{"llmc", "byte", 257, 256},
        std::tuple<std::string, std::string, int, int>{"bytes", "external", 50257, 50256}}) {
    const fs::path out = dir / name;
    EXPECT_NO_THROW(Dataset::open(out).check_tokenizer_label()) << name;
    Manifest m = read_manifest(out / kManifestFile);
    const Digest root = manifest_root(m), layout = layout_digest(m);
    m.tokenizer = label;
    m.vocab_size = vocab;
    m.eot_token = eot;
    write_manifest(out / kManifestFile, m);
    const Manifest relabelled = read_manifest(out / kManifestFile);
    EXPECT_EQ(manifest_root(relabelled), root);  // what the run commits to does not see it
    EXPECT_EQ(layout_digest(relabelled), layout);
    const std::string msg = error_of([&] { Dataset::open(out).check_tokenizer_label(); });
    EXPECT_TRUE(contains(msg, "labelled '" + label + "' data, but its first train record")) << msg;
  }
}

// wit query finds an llm.c document by GPT-2's encoding of its text, so a record holding the
// same text tokenized otherwise would hide it: "()*" is GPT-2's [3419, 9], not [7, 8, 9].
TEST(Prepare, llmc_records_must_hold_gpt2s_encoding_of_their_text) {
  TempDir dir;
  fs::create_directories(dir / "in");
  write_shard(dir / "in/train.bin", {kEot, 15496, 995, kEot, 7, 8, 9});
  PrepareOptions o;
  o.input = dir / "in/train.bin";
  o.out = dir / "out";
  prepare(o);
  const std::string msg = error_of([&] { Dataset::open(dir / "out").verify_documents(); });
  EXPECT_TRUE(contains(msg, "document 1 (train split, tokens 3 to 7): its tokens are not "
                            "GPT-2's encoding of the text they decode to (at token 1 it holds 7 "
                            "where the encoding has 3419)"))
      << msg;
  write_shard(dir / "in/train.bin", {kEot, 15496, 995, kEot, 3419, 9});
  o.force = true;
  prepare(o);
  EXPECT_EQ(Dataset::open(dir / "out").verify_documents(), 0u);
}

TEST(Prepare, llmc_rejects_tokens_outside_the_gpt2_vocabulary) {
  TempDir dir;
  fs::create_directories(dir / "in");
  write_shard(dir / "in/train.bin", {kEot, 1, 50257, 2});
  PrepareOptions o;
  o.input = dir / "in/train.bin";
  o.out = dir / "out";
  std::string msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, "token 50257 at position 2")) << msg;
  EXPECT_TRUE(contains(msg, "train.bin")) << msg;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(Prepare, llmc_needs_train_shards) {
  TempDir dir;
  fs::create_directories(dir / "in");
  write_shard(dir / "in/val.bin", {kEot, 1});
  PrepareOptions o;
  o.input = dir / "in";
  o.out = dir / "out";
  std::string msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, "no train shards")) << msg;
}

}  // namespace
}  // namespace wit::data
