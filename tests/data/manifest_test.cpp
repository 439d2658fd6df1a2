// The HDF5 layer (core/h5.h) and the dataset manifest built on it: round trips, the documented
// layout, and validation that names the broken field (lengths, shard indices, the Merkle root).
#include "trainer/data/manifest.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/h5.h"
#include "core/merkle.h"
#include "tests/data/temp_dir.h"

namespace wit::data {
namespace {

using wit::testing::error_of;
using wit::testing::contains;
using wit::testing::TempDir;


// ---------------------------------------------------------------------------------------------
// core/h5

TEST(H5, numeric_datasets_round_trip) {
  TempDir dir;
  fs::path p = dir / "n.h5";
  {
    h5::File f = h5::File::create(p);
    f.write("u8", std::vector<uint8_t>{0, 255, 7});
    f.write("u32", std::vector<uint32_t>{1, 4000000000u});
    f.write("u64", std::vector<uint64_t>{UINT64_MAX, 0});
    f.write("i64", std::vector<int64_t>{INT64_MIN, -1, 5});
    f.write("f32", std::vector<float>{1.5f, -0.0f});
    f.write("f64", std::vector<double>{3.141592653589793, 1e-300});
    f.write("empty", std::vector<uint64_t>{});
    f.create_group("a/b").write("deep", std::vector<uint32_t>{9});
  }
  h5::File f = h5::File::open_read(p);
  EXPECT_EQ(f.read<uint8_t>("u8"), (std::vector<uint8_t>{0, 255, 7}));
  EXPECT_EQ(f.read<uint32_t>("u32"), (std::vector<uint32_t>{1, 4000000000u}));
  EXPECT_EQ(f.read<uint64_t>("u64"), (std::vector<uint64_t>{UINT64_MAX, 0}));
  EXPECT_EQ(f.read<int64_t>("i64"), (std::vector<int64_t>{INT64_MIN, -1, 5}));
  EXPECT_EQ(f.read<float>("f32"), (std::vector<float>{1.5f, -0.0f}));
  EXPECT_EQ(f.read<double>("f64"), (std::vector<double>{3.141592653589793, 1e-300}));
  EXPECT_TRUE(f.read<uint64_t>("empty").empty());
  EXPECT_EQ(f.open_group("a").read<uint32_t>("b/deep"), std::vector<uint32_t>{9});
  EXPECT_TRUE(f.exists("a/b/deep"));
  EXPECT_FALSE(f.exists("a/c/deep"));
  EXPECT_EQ(f.open_dataset("u64").shape(), std::vector<uint64_t>{2});
}

TEST(H5, attributes_round_trip_and_replace) {
  TempDir dir;
  fs::path p = dir / "a.h5";
  {
    h5::File f = h5::File::create(p);
    f.set_string_attr("name", "first");
    f.set_string_attr("name", "wit \xe2\x9c\x93");  // replaced, UTF-8 kept
    f.set_int_attr("version", -3);
    f.set_uint_attr("seed", UINT64_MAX);
    f.set_double_attr("fraction", 0.05);
    h5::Group g = f.create_group("g");
    g.set_string_attr("empty", "");
    h5::Dataset d = g.write("d", std::vector<uint8_t>{1});
    d.set_uint_attr("rows", 1);
  }
  h5::File f = h5::File::open_read(p);
  EXPECT_EQ(f.string_attr("name"), "wit \xe2\x9c\x93");
  EXPECT_EQ(f.int_attr("version"), -3);
  EXPECT_EQ(f.uint_attr("seed"), UINT64_MAX);
  EXPECT_EQ(f.double_attr("fraction"), 0.05);
  EXPECT_TRUE(f.has_attr("seed"));
  EXPECT_FALSE(f.has_attr("nope"));
  EXPECT_EQ(f.open_group("g").string_attr("empty"), "");
  EXPECT_EQ(f.open_dataset("g/d").uint_attr("rows"), 1u);
  std::string msg = error_of([&] { f.string_attr("nope"); });
  EXPECT_TRUE(contains(msg, p.string() + ":/ has no attribute 'nope'")) << msg;
  msg = error_of([&] { f.int_attr("name"); });
  EXPECT_TRUE(contains(msg, "holds string values, expected int64")) << msg;
  msg = error_of([&] { f.string_attr("version"); });
  EXPECT_TRUE(contains(msg, "does not hold strings")) << msg;
}

TEST(H5, strings_and_digests_round_trip) {
  TempDir dir;
  fs::path p = dir / "s.h5";
  std::vector<std::string> strings = {"train_000000.bin", "", "na\xc3\xafve"};
  std::vector<Digest> digests = {sha256("a"), sha256("b"), sha256("c")};
  {
    h5::File f = h5::File::create(p);
    f.write_strings("names", strings);
    f.write_strings("none", {});
    f.write_digests("sha", digests);
  }
  h5::File f = h5::File::open_read(p);
  EXPECT_EQ(f.read_strings("names"), strings);
  EXPECT_TRUE(f.read_strings("none").empty());
  EXPECT_EQ(f.read_digests("sha"), digests);
  EXPECT_EQ(f.open_dataset("sha").shape(), (std::vector<uint64_t>{3, 32}));
  EXPECT_EQ(f.open_dataset("sha").read_digest_rows(1, 2),
            (std::vector<Digest>{digests[1], digests[2]}));
  std::string msg = error_of([&] { f.read_digests("names"); });
  EXPECT_TRUE(contains(msg, "expected (n, 32) digests")) << msg;
}

TEST(H5, series_grow_by_append_and_survive_reopen) {
  TempDir dir;
  fs::path p = dir / "log.h5";
  {
    h5::File f = h5::File::create(p);
    h5::Dataset step = f.create_series<uint64_t>("steps/step", 4);
    h5::Dataset loss = f.create_series<float>("steps/loss", 4);
    h5::Dataset hash = f.create_digest_series("steps/batch_hash", 4);
    EXPECT_EQ(step.rows(), 0u);
    for (uint64_t s = 0; s < 10; ++s) {  // one row per training step, across chunk boundaries
      step.append(std::vector<uint64_t>{s});
      float l = 10.0f - float(s);
      loss.append(&l, 1);
      hash.append_digests({sha256(std::to_string(s))});
      step.flush();
    }
    step.append(std::vector<uint64_t>{});
    EXPECT_EQ(step.rows(), 10u);
  }
  {
    h5::File f = h5::File::open_rw(p);  // resume appends
    f.open_dataset("steps/step").append(std::vector<uint64_t>{10, 11});
    f.flush();
  }
  h5::File f = h5::File::open_read(p);
  std::vector<uint64_t> steps = f.read<uint64_t>("steps/step");
  ASSERT_EQ(steps.size(), 12u);
  for (uint64_t s = 0; s < 12; ++s) EXPECT_EQ(steps[s], s);
  EXPECT_EQ(f.read<float>("steps/loss")[9], 1.0f);
  EXPECT_EQ(f.open_dataset("steps/step").read_rows<uint64_t>(3, 2), (std::vector<uint64_t>{3, 4}));
  std::vector<Digest> hashes = f.read_digests("steps/batch_hash");
  ASSERT_EQ(hashes.size(), 10u);
  EXPECT_EQ(hashes[7], sha256("7"));
  std::string msg = error_of([&] { f.open_dataset("steps/step").read_rows<uint64_t>(11, 2); });
  EXPECT_TRUE(contains(msg, "cannot read rows [11, 13)")) << msg;
}

TEST(H5, errors_name_the_file_the_object_and_the_cause) {
  TempDir dir;
  fs::path p = dir / "e.h5";
  h5::File f = h5::File::create(p);
  f.write("fixed", std::vector<uint64_t>{1, 2});
  std::string msg = error_of([&] { f.write("fixed", std::vector<uint64_t>{3}); });
  EXPECT_TRUE(contains(msg, "HDF5: cannot create dataset " + p.string() + ":/fixed")) << msg;
  EXPECT_TRUE(contains(msg, "already exists")) << msg;  // HDF5's own stack message
  msg = error_of([&] { f.open_dataset("missing"); });
  EXPECT_TRUE(contains(msg, "has no dataset '/missing'")) << msg;
  msg = error_of([&] { f.open_group("missing/deeper"); });
  EXPECT_TRUE(contains(msg, "has no group '/missing/deeper'")) << msg;
  msg = error_of([&] { f.read<float>("fixed"); });
  EXPECT_TRUE(contains(msg, "holds integer values, expected float32")) << msg;
  msg = error_of([&] { f.open_dataset("fixed").append(std::vector<uint64_t>{3}); });
  EXPECT_TRUE(contains(msg, "cannot extend")) << msg;
  msg = error_of([&] { h5::File::open_read(dir / "absent.h5"); });
  EXPECT_TRUE(contains(msg, "absent.h5: no such file")) << msg;
  {
    std::ofstream text(dir / "text.h5");
    text << "not hdf5 at all";
  }
  msg = error_of([&] { h5::File::open_read(dir / "text.h5"); });
  EXPECT_TRUE(contains(msg, "text.h5: not an HDF5 file")) << msg;
  msg = error_of([&] { h5::File::create(dir / "no/such/dir/x.h5"); });
  EXPECT_TRUE(contains(msg, "HDF5: cannot create file")) << msg;
  EXPECT_TRUE(contains(msg, "no/such/dir/x.h5")) << msg;
}

TEST(H5, handles_move_and_close_once) {
  TempDir dir;
  fs::path p = dir / "m.h5";
  h5::File a = h5::File::create(p);
  h5::Group g = a.create_group("g");
  h5::File b = std::move(a);
  EXPECT_EQ(a.id(), -1);
  h5::Group g2;
  g2 = std::move(g);
  g2.write("x", std::vector<uint8_t>{1});
  b.remove("g/x");
  EXPECT_FALSE(b.exists("g/x"));
  b.close();
  g2 = h5::Group();  // the last handle: the file is closed now and can be reopened read-only
  EXPECT_TRUE(h5::File::open_read(p).exists("g"));
}

// ---------------------------------------------------------------------------------------------
// Manifest

Manifest sample_manifest() {
  Manifest m;
  m.tokenizer = "byte";
  m.vocab_size = 257;
  m.eot_token = 256;
  m.split_seed = 1337;
  m.val_fraction = 0.25;
  m.source = "corpus.txt";
  m.shards = {{"train_000000.bin", 0, 12, sha256("shard0")},
              {"val_000000.bin", 1, 5, sha256("shard1")}};
  m.documents = {{0, 0, 0, 0, 4, sha256("doc0")},
                 {1, 1, 1, 0, 5, sha256("doc1")},
                 {2, 0, 0, 4, 8, sha256("doc2")}};
  m.root = manifest_root(m);
  return m;
}

// Rewrites one dataset of a written manifest, bypassing write_manifest's validation.
template <typename Fn>
void tamper(const fs::path& p, const std::string& dataset, Fn&& write_new) {
  h5::File f = h5::File::open_rw(p);
  f.remove(dataset);
  write_new(f);
}

TEST(Manifest, round_trips_every_field) {
  TempDir dir;
  Manifest m = sample_manifest();
  write_manifest(dir / "manifest.h5", m);
  EXPECT_FALSE(fs::exists(dir / ("manifest.h5.tmp-" + std::to_string(::getpid()))));
  Manifest r = read_manifest(dir / "manifest.h5");
  EXPECT_EQ(r.format_version, 2);
  EXPECT_EQ(r.tokenizer, "byte");
  EXPECT_EQ(r.vocab_size, 257);
  EXPECT_EQ(r.eot_token, 256);
  EXPECT_EQ(r.split_seed, 1337u);
  EXPECT_EQ(r.val_fraction, 0.25);
  EXPECT_EQ(r.split_rule, "wit-split-v1");
  EXPECT_EQ(r.source, "corpus.txt");
  EXPECT_EQ(r.root, m.root);
  ASSERT_EQ(r.shards.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.shards[i].file, m.shards[i].file);
    EXPECT_EQ(r.shards[i].split, m.shards[i].split);
    EXPECT_EQ(r.shards[i].tokens, m.shards[i].tokens);
    EXPECT_EQ(r.shards[i].sha256, m.shards[i].sha256);
  }
  ASSERT_EQ(r.documents.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.documents[i].id, m.documents[i].id);
    EXPECT_EQ(r.documents[i].split, m.documents[i].split);
    EXPECT_EQ(r.documents[i].shard, m.documents[i].shard);
    EXPECT_EQ(r.documents[i].offset, m.documents[i].offset);
    EXPECT_EQ(r.documents[i].length, m.documents[i].length);
    EXPECT_EQ(r.documents[i].sha256, m.documents[i].sha256);
  }
}

TEST(Manifest, file_has_the_documented_layout) {
  TempDir dir;
  Manifest m = sample_manifest();
  write_manifest(dir / "manifest.h5", m);
  h5::File f = h5::File::open_read(dir / "manifest.h5");
  EXPECT_EQ(f.string_attr("root"), to_hex(m.root));
  EXPECT_EQ(f.int_attr("format_version"), 2);
  EXPECT_EQ(f.read_strings("shards/file"),
            (std::vector<std::string>{"train_000000.bin", "val_000000.bin"}));
  EXPECT_EQ(f.read<uint64_t>("shards/tokens"), (std::vector<uint64_t>{12, 5}));
  EXPECT_EQ(f.read<uint8_t>("documents/split"), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(f.read<uint32_t>("documents/shard"), (std::vector<uint32_t>{0, 1, 0}));
  EXPECT_EQ(f.read<uint64_t>("documents/offset"), (std::vector<uint64_t>{0, 0, 4}));
  EXPECT_EQ(f.read<uint64_t>("documents/length"), (std::vector<uint64_t>{4, 5, 8}));
  EXPECT_EQ(f.open_dataset("documents/sha256").shape(), (std::vector<uint64_t>{3, 32}));
}

TEST(Manifest, root_commits_to_each_documents_hash_split_and_place) {
  Manifest m = sample_manifest();
  // Records sorted by content hash; places in each split's stream (train: 0 and 4, val: 0).
  std::vector<DocumentRecord> records = {{m.documents[0].sha256, 0, 0, 4},
                                         {m.documents[1].sha256, 1, 0, 5},
                                         {m.documents[2].sha256, 0, 4, 8}};
  std::sort(records.begin(), records.end(), record_before);
  std::vector<Digest> leaves;
  for (auto& r : records) leaves.push_back(record_digest(r));
  EXPECT_EQ(m.root, manifest_root_from(merkle_root(leaves), 3, 12, 5));
  Manifest reversed = m;
  std::reverse(reversed.documents.begin(), reversed.documents.end());
  EXPECT_EQ(manifest_root(reversed), m.root);  // the order of the rows does not matter
  // The same documents in another split, at another place, or with streams of another length:
  // another root.
  Manifest other = m;
  other.documents[2].offset = 3;
  EXPECT_NE(manifest_root(other), m.root);
  other = m;
  other.shards[0].tokens = 13;
  EXPECT_NE(manifest_root(other), m.root);
}

TEST(Manifest, tampered_document_hash_breaks_the_root) {
  TempDir dir;
  fs::path p = dir / "manifest.h5";
  Manifest m = sample_manifest();
  write_manifest(p, m);
  tamper(p, "documents/sha256", [&](h5::File& f) {
    std::vector<Digest> sha = {m.documents[0].sha256, m.documents[1].sha256, m.documents[2].sha256};
    sha[1][5] ^= 1;
    f.write_digests("documents/sha256", sha);
  });
  std::string msg = error_of([&] { read_manifest(p); });
  EXPECT_TRUE(contains(msg, p.string())) << msg;
  EXPECT_TRUE(contains(msg, "Merkle root mismatch")) << msg;
}

TEST(Manifest, tampered_bytes_in_the_file_are_caught) {
  TempDir dir;
  fs::path p = dir / "manifest.h5";
  Manifest m = sample_manifest();
  write_manifest(p, m);
  // Flip one byte of document 2's hash where it lies in the raw file.
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string needle(reinterpret_cast<const char*>(m.documents[2].sha256.data()), 32);
  size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] ^= 0x10;
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
  }
  std::string msg = error_of([&] { read_manifest(p); });
  EXPECT_TRUE(contains(msg, "Merkle root mismatch")) << msg;
}

TEST(Manifest, mismatched_array_lengths_are_named) {
  TempDir dir;
  fs::path p = dir / "manifest.h5";
  write_manifest(p, sample_manifest());
  tamper(p, "documents/length", [](h5::File& f) {
    f.write("documents/length", std::vector<uint64_t>{4, 5});
  });
  std::string msg = error_of([&] { read_manifest(p); });
  EXPECT_TRUE(contains(msg, "documents/length has 2 entries but documents/id has 3")) << msg;
}

TEST(Manifest, shard_index_out_of_range_is_named) {
  TempDir dir;
  fs::path p = dir / "manifest.h5";
  write_manifest(p, sample_manifest());
  tamper(p, "documents/shard", [](h5::File& f) {
    f.write("documents/shard", std::vector<uint32_t>{0, 7, 0});
  });
  std::string msg = error_of([&] { read_manifest(p); });
  EXPECT_TRUE(contains(msg, "documents/shard[1] = 7 but there are 2 shards")) << msg;
}

TEST(Manifest, unsupported_version_is_rejected) {
  TempDir dir;
  fs::path p = dir / "manifest.h5";
  write_manifest(p, sample_manifest());
  h5::File::open_rw(p).set_int_attr("format_version", 3);
  std::string msg = error_of([&] { read_manifest(p); });
  EXPECT_TRUE(contains(msg, "unsupported manifest format_version 3")) << msg;
}

TEST(Manifest, inconsistent_manifests_are_not_written) {
  TempDir dir;
  Manifest m = sample_manifest();
  m.documents[2].split = 1;  // its shard is a train shard
  m.root = manifest_root(m);
  std::string msg = error_of([&] { write_manifest(dir / "manifest.h5", m); });
  EXPECT_TRUE(contains(msg, "document 2 is val but its shard 0 (train_000000.bin) is train"))
      << msg;
  EXPECT_FALSE(fs::exists(dir / "manifest.h5"));

  m = sample_manifest();
  m.documents[2].length = 9;  // runs past the 12 train tokens
  m.root = manifest_root(m);
  msg = error_of([&] { write_manifest(dir / "manifest.h5", m); });
  EXPECT_TRUE(contains(msg, "runs past the end of the train split")) << msg;

  // A length whose end wraps past 2^64 back inside the split.
  m = sample_manifest();
  m.documents[2].length = ~uint64_t(0) - 2;  // 2^64 - 3: at offset 4 its end wraps to token 1
  m.root = manifest_root(m);
  msg = error_of([&] { write_manifest(dir / "manifest.h5", m); });
  EXPECT_TRUE(contains(msg, "document 2 (offset 4, length 18446744073709551613 in shard "
                            "train_000000.bin) runs past the end of the train split"))
      << msg;

  m = sample_manifest();
  m.shards[0].file = "../escape.bin";
  msg = error_of([&] { write_manifest(dir / "manifest.h5", m); });
  EXPECT_TRUE(contains(msg, "is not a plain file name")) << msg;

  m = sample_manifest();
  m.root[0] ^= 1;
  msg = error_of([&] { write_manifest(dir / "manifest.h5", m); });
  EXPECT_TRUE(contains(msg, "Merkle root mismatch")) << msg;
}

// Each tokenizer's vocabulary and end-of-text token are fixed: they decide how a record's hash
// is checked and how wit query hashes a text, so a manifest may not choose them. (Byte text
// labelled external, with its own end-of-text, would be found by no text query.)
TEST(Manifest, each_tokenizer_has_its_own_vocabulary) {
  TempDir dir;
  const auto refusal = [&](const std::string& tokenizer, int vocab, int eot) {
    Manifest m = sample_manifest();
    m.tokenizer = tokenizer;
    m.tokenizer_vocab = sha256("vocab");
    m.vocab_size = vocab;
    m.eot_token = eot;
    try {
      write_manifest(dir / "manifest.h5", m);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();  // written
  };
  for (const char* t : {"external", "gpt2"}) {
    const std::string msg = refusal(t, 257, 256);
    EXPECT_TRUE(contains(msg, std::string("the ") + t +
                                  " tokenizer has vocab_size 50257 and eot_token 50256, "
                                  "manifest says 257 and 256"))
        << msg;
    EXPECT_TRUE(contains(refusal(t, 50257, 0), "manifest says 50257 and 0"));
    EXPECT_EQ(refusal(t, 50257, 50256), "");
  }
  EXPECT_TRUE(contains(refusal("byte", 50257, 50256), "the byte tokenizer has vocab_size 257"));
  EXPECT_FALSE(fs::exists(dir / ("manifest.h5.tmp-" + std::to_string(::getpid()))));
}

TEST(Manifest, missing_or_foreign_files_get_clear_errors) {
  TempDir dir;
  std::string msg = error_of([&] { read_manifest(dir / "manifest.h5"); });
  EXPECT_TRUE(contains(msg, "no such file")) << msg;
  h5::File::create(dir / "other.h5").write("x", std::vector<uint8_t>{1});
  msg = error_of([&] { read_manifest(dir / "other.h5"); });
  EXPECT_TRUE(contains(msg, "has no attribute 'format_version'")) << msg;
}

}  // namespace
}  // namespace wit::data
