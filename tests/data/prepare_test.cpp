// `wit prepare` end to end: text, directory, JSONL, llm.c and KJV inputs; splits that depend
// only on content and seed; shards that agree with the manifest; refusals and safe failures;
// and Dataset::open on the result.
#include "trainer/data/prepare.h"

#include <gtest/gtest.h>


#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "core/error.h"
#include "tests/data/corpus_files.h"
#include "tests/data/prepared_dataset.h"
#include "tests/data/temp_dir.h"
#include "trainer/data/corpus.h"
#include "trainer/data/dataset.h"
#include "trainer/data/manifest.h"
#include "trainer/data/shard.h"
#include "trainer/data/split.h"
#include "trainer/data/tokenizer.h"

namespace wit::data {
namespace {

using wit::testing::error_of;
using wit::testing::contains;
using wit::testing::join_with_separators;
using wit::testing::numbered_documents;
using wit::testing::TempDir;
using wit::testing::write_text;



// ---------------------------------------------------------------------------------------------
// Corpus readers

TEST(Corpus, text_file_splits_at_separator_lines_and_canonicalizes_crlf) {
  TempDir dir;
  write_text(dir / "c.txt",
             "first\r\ndoc\r\n<|endoftext|>\r\nsecond <|endoftext|> inline\n<|endoftext|>\n"
             "<|endoftext|>\nlast\r");
  std::vector<Document> docs = collect_documents(dir / "c.txt", "text", "text");
  ASSERT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[0].text, "first\ndoc\n");
  EXPECT_EQ(docs[1].text, "second <|endoftext|> inline\n");
  EXPECT_EQ(docs[2].text, "");        // between two separators: prepare skips it
  EXPECT_EQ(docs[3].text, "last\r");  // a lone CR is kept
  EXPECT_EQ(docs[0].source, (dir / "c.txt").string() + ":1");
  EXPECT_EQ(docs[1].source, (dir / "c.txt").string() + ":4");
  EXPECT_EQ(docs[3].source, (dir / "c.txt").string() + ":7");
}

// Canonical bytes are a fixed point: a run of CRs ending a line goes whole. Dropping one CR of
// "\r\r\n" would leave "\r\n", bytes no query could ever hash to.
TEST(Corpus, canonical_bytes_are_canonical_again) {
  EXPECT_EQ(canonicalize("a\r\r\nb\r\nc\r\rd\r"), "a\nb\nc\r\rd\r");
  for (const char* raw : {"a\r\r\nb", "\r\r\r\n", "x\r\ny\r", "\r", "\n\r\n\r"}) {
    const std::string once = canonicalize(raw);
    EXPECT_EQ(canonicalize(once), once) << raw;
    EXPECT_EQ(once.find("\r\n"), std::string::npos) << raw;
  }
}

TEST(Corpus, text_file_without_separators_is_one_document) {
  TempDir dir;
  write_text(dir / "one.txt", "just\none document\n");
  std::vector<Document> docs = collect_documents(dir / "one.txt", "auto", "text");
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].text, "just\none document\n");
  EXPECT_EQ(docs[0].source, (dir / "one.txt").string());
}

TEST(Corpus, directory_is_read_recursively_in_path_order_skipping_hidden_files) {
  TempDir dir;
  write_text(dir / "in/b.txt", "B");
  write_text(dir / "in/a/z.txt", "AZ1\n<|endoftext|>\nAZ2");
  write_text(dir / "in/a.txt", "A");
  write_text(dir / "in/.hidden", "H");
  write_text(dir / "in/.git/config", "G");
  std::vector<Document> docs = collect_documents(dir / "in", "auto", "text");
  std::vector<std::string> texts, sources;
  for (auto& d : docs) texts.push_back(d.text), sources.push_back(d.source);
  EXPECT_EQ(texts, (std::vector<std::string>{"A", "AZ1\n", "AZ2", "B"}));
  EXPECT_EQ(sources, (std::vector<std::string>{"a.txt", "a/z.txt:1", "a/z.txt:3", "b.txt"}));
}

TEST(Corpus, jsonl_reads_the_named_field_and_names_bad_lines) {
  TempDir dir;
  write_text(
      dir / "d.jsonl",
      "{\"text\": \"one\\r\\ntwo\", \"id\": 1}\n\n{\"body\": \"x\", \"text\": \"\\u00e9\"}\n");
  std::vector<Document> docs = collect_documents(dir / "d.jsonl", "auto", "text");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].text, "one\ntwo");
  EXPECT_EQ(docs[1].text, "\xc3\xa9");
  EXPECT_EQ(docs[1].source, (dir / "d.jsonl").string() + ":3");

  std::string where = (dir / "d.jsonl").string();
  std::string msg = error_of([&] { collect_documents(dir / "d.jsonl", "jsonl", "body"); });
  EXPECT_TRUE(contains(msg, where + ":1: the object has no field 'body'; its fields: 'id' (number), 'text' (string); choose the text's with --text-field")) << msg;
  msg = error_of([&] { collect_documents(dir / "d.jsonl", "jsonl", "id"); });
  EXPECT_TRUE(contains(msg, where + ":1: field 'id' is number, expected a string")) << msg;

  write_text(dir / "bad.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"unterminated}\n");
  msg = error_of([&] { collect_documents(dir / "bad.jsonl", "auto", "text"); });
  EXPECT_TRUE(contains(msg, (dir / "bad.jsonl").string() + ":2: invalid JSON")) << msg;
  write_text(dir / "arr.jsonl", "[1, 2]\n");
  msg = error_of([&] { collect_documents(dir / "arr.jsonl", "auto", "text"); });
  EXPECT_TRUE(contains(msg, ":1: expected a JSON object, found array")) << msg;
}

TEST(Corpus, formats_are_detected_from_the_input) {
  TempDir dir;
  write_text(dir / "a.txt", "x");
  write_text(dir / "a.jsonl", "{}");
  write_text(dir / "a.bin", "x");
  write_text(dir / "bins/x.bin", "x");
  write_text(dir / "bins/.hidden", "x");
  write_text(dir / "mixed/x.bin", "x");
  write_text(dir / "mixed/readme.md", "x");
  write_text(dir / "nested/sub/x.bin", "x");
  EXPECT_EQ(resolve_format("", "auto"), "kjv");
  EXPECT_EQ(resolve_format(dir / "a.txt", "auto"), "text");
  EXPECT_EQ(resolve_format(dir / "a.jsonl", "auto"), "jsonl");
  EXPECT_EQ(resolve_format(dir / "a.bin", "auto"), "llmc");
  EXPECT_EQ(resolve_format(dir / "bins", "auto"), "llmc");
  EXPECT_EQ(resolve_format(dir / "mixed", "auto"), "dir");
  EXPECT_EQ(resolve_format(dir / "nested", "auto"), "dir");
  EXPECT_EQ(resolve_format(dir / "a.jsonl", "text"), "text");
  EXPECT_TRUE(contains(error_of([&] { resolve_format(dir / "a.txt", "csv"); }),
                       "unknown corpus format 'csv'"));
  EXPECT_TRUE(
      contains(error_of([&] { resolve_format(dir / "nope.txt", "auto"); }), "does not exist"));
  EXPECT_TRUE(
      contains(error_of([&] { resolve_format(dir / "a.txt", "dir"); }), "needs a directory"));
  EXPECT_TRUE(contains(error_of([&] { resolve_format("", "jsonl"); }), "needs an input path"));
}

TEST(Corpus, kjv_is_1189_chapters_starting_with_genesis) {
  std::vector<Document> docs;
  read_kjv_documents([&](Document&& d) { docs.push_back(std::move(d)); });
  ASSERT_EQ(docs.size(), 1189u);
  EXPECT_EQ(docs[0].source, "Genesis 1");
  EXPECT_EQ(
      docs[0].text.rfind("Genesis 1\n1 In the beginning God created the heaven and the earth.\n"
                         "2 And the earth was without form",
                         0),
      0u)
      << docs[0].text.substr(0, 200);
  EXPECT_EQ(docs[49].source, "Genesis 50");
  EXPECT_EQ(docs[50].source, "Exodus 1");
  EXPECT_EQ(docs[1188].source, "Revelation 22");
  EXPECT_TRUE(contains(docs[1188].text,
                       "\n21 The grace of our Lord Jesus Christ be with you all. Amen.\n"));
  std::map<std::string, int> chapters_per_book;
  for (auto& d : docs) chapters_per_book[d.source.substr(0, d.source.rfind(' '))]++;
  EXPECT_EQ(chapters_per_book.size(), 66u);
  EXPECT_EQ(chapters_per_book["Psalms"], 150);
  EXPECT_EQ(chapters_per_book["Song of Solomon"], 8);
  EXPECT_EQ(chapters_per_book["3 John"], 1);
}

// ---------------------------------------------------------------------------------------------
// Splits

TEST(Split, depends_only_on_content_and_seed) {
  std::vector<Digest> docs;
  for (int i = 0; i < 2000; ++i) docs.push_back(sha256("doc " + std::to_string(i)));
  std::vector<uint8_t> a = assign_splits(docs, 7, 0.1);
  size_t val = std::count(a.begin(), a.end(), kSplitVal);
  EXPECT_GT(val, 140u);  // ~200 expected
  EXPECT_LT(val, 260u);
  EXPECT_EQ(assign_splits(docs, 7, 0.1), a);
  EXPECT_NE(assign_splits(docs, 8, 0.1), a);
  uint64_t threshold = uint64_t(std::ceil(std::ldexp(0.1, 64)));
  for (size_t i = 0; i < docs.size(); ++i)
    EXPECT_EQ(a[i], split_key(7, docs[i]) < threshold ? kSplitVal : kSplitTrain) << i;
  std::vector<Digest> reversed(docs.rbegin(), docs.rend());
  std::vector<uint8_t> r = assign_splits(reversed, 7, 0.1);
  for (size_t i = 0; i < docs.size(); ++i) EXPECT_EQ(r[docs.size() - 1 - i], a[i]);
  std::vector<uint8_t> none = assign_splits(docs, 7, 0.0);
  EXPECT_EQ(std::count(none.begin(), none.end(), kSplitVal), 0);
  EXPECT_THROW(assign_splits(docs, 7, 1.0), Error);
  EXPECT_THROW(assign_splits(docs, 7, -0.1), Error);
}

TEST(Split, threshold_is_exact) {
  // A document whose key lies mid-range, and companions below and above it, so that the
  // tiny-corpus corrections never apply.
  Digest doc{};
  uint64_t key = 0;
  for (int i = 0; key < (uint64_t(1) << 62) || key > 3 * (uint64_t(1) << 62); ++i)
    key = split_key(3, doc = sha256("mid " + std::to_string(i)));
  uint64_t floor_key = key >> 11 << 11;  // exactly representable as a double
  Digest low{}, high{};
  for (int i = 0; split_key(3, low = sha256("low " + std::to_string(i))) >= floor_key; ++i) {
  }
  for (int i = 0; split_key(3, high = sha256("high " + std::to_string(i))) < floor_key + 4096;
       ++i) {
  }
  std::vector<Digest> docs = {doc, low, high};
  // val iff key < ceil(val_fraction * 2^64): at floor_key the document is train, one
  // representable step above it (floor_key + 2048 > key) it is val.
  double at_floor = std::ldexp(double(floor_key), -64);
  double one_step_up = std::ldexp(double(floor_key + 2048), -64);
  EXPECT_EQ(assign_splits(docs, 3, at_floor),
            (std::vector<uint8_t>{kSplitTrain, kSplitVal, kSplitTrain}));
  EXPECT_EQ(assign_splits(docs, 3, one_step_up),
            (std::vector<uint8_t>{kSplitVal, kSplitVal, kSplitTrain}));
}

TEST(Split, tiny_corpora_get_one_val_document_and_keep_train) {
  std::vector<Digest> docs = {sha256("a"), sha256("b"), sha256("c")};
  std::vector<uint8_t> s = assign_splits(docs, 1, 1e-9);  // nothing lands in val by hash
  EXPECT_EQ(std::count(s.begin(), s.end(), kSplitVal), 1);
  size_t smallest = 0;
  for (size_t i = 1; i < 3; ++i)
    if (split_key(1, docs[i]) < split_key(1, docs[smallest])) smallest = i;
  EXPECT_EQ(s[smallest], kSplitVal);

  s = assign_splits(docs, 1, 0.999999);  // everything lands in val by hash
  EXPECT_EQ(std::count(s.begin(), s.end(), kSplitTrain), 1);

  std::vector<uint8_t> one = assign_splits({sha256("a")}, 1, 0.5);
  EXPECT_EQ(one[0], kSplitTrain);

  // Identical copies always share a split.
  std::vector<Digest> dup = {sha256("a"), sha256("a"), sha256("b")};
  s = assign_splits(dup, 1, 1e-9);
  EXPECT_EQ(s[0], s[1]);
}

// ---------------------------------------------------------------------------------------------
// prepare: text inputs

TEST(Prepare, text_corpus_produces_consistent_shards_and_manifest) {
  TempDir dir;
  std::vector<std::string> docs = numbered_documents(40);
  docs.insert(docs.begin() + 3, "");  // skipped and counted
  write_text(dir / "corpus.txt", join_with_separators(docs));
  PrepareOptions o;
  o.input = dir / "corpus.txt";
  o.out = dir / "out";
  o.val_fraction = 0.2;
  std::vector<std::string> progress;
  PrepareReport r = prepare(o, [&](const std::string& line) { progress.push_back(line); });
  EXPECT_EQ(r.format, "text");
  EXPECT_EQ(r.documents, 40u);
  EXPECT_EQ(r.skipped_empty, 1u);
  EXPECT_EQ(r.train_documents + r.val_documents, 40u);
  EXPECT_GT(r.val_documents, 0u);
  EXPECT_GT(r.train_documents, r.val_documents);
  EXPECT_FALSE(progress.empty());
  EXPECT_TRUE(fs::exists(dir / "out/train_000000.bin"));
  EXPECT_TRUE(fs::exists(dir / "out/val_000000.bin"));
  check_consistent(dir / "out", r);

  Dataset data = Dataset::open(dir / "out");
  const Manifest& m = data.manifest();
  EXPECT_EQ(m.tokenizer, "byte");
  EXPECT_EQ(m.vocab_size, 257);
  EXPECT_EQ(m.eot_token, 256);
  EXPECT_EQ(m.split_seed, 1337u);
  EXPECT_EQ(m.val_fraction, 0.2);
  EXPECT_EQ(m.source, (dir / "corpus.txt").string());
  // Documents keep input order (the empty one dropped) and the hash-rule split.
  docs.erase(docs.begin() + 3);
  std::vector<std::string> texts = documents_from_shards(data);
  EXPECT_EQ(texts, docs);
  std::vector<Digest> shas;
  for (auto& t : docs) shas.push_back(sha256(t));
  std::vector<uint8_t> splits = assign_splits(shas, 1337, 0.2);
  for (size_t i = 0; i < docs.size(); ++i) EXPECT_EQ(m.documents[i].split, splits[i]);
}

TEST(Prepare, split_is_deterministic_and_independent_of_document_order) {
  TempDir dir;
  std::vector<std::string> docs = numbered_documents(60);
  write_text(dir / "a.txt", join_with_separators(docs));
  std::vector<std::string> shuffled = docs;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(5));
  write_text(dir / "b.txt", join_with_separators(shuffled));

  auto run = [&](const std::string& input, const std::string& out, uint64_t seed) {
    PrepareOptions o;
    o.input = dir / input;
    o.out = dir / out;
    o.seed = seed;
    o.val_fraction = 0.3;
    prepare(o);
    std::map<Digest, uint8_t> split_of;
    for (const DocumentEntry& d : read_manifest(dir / out / "manifest.h5").documents)
      split_of[d.sha256] = d.split;
    return std::make_pair(split_of, read_manifest(dir / out / "manifest.h5").root);
  };
  auto [a1, root_a1] = run("a.txt", "a1", 11);
  auto [a2, root_a2] = run("a.txt", "a2", 11);
  auto [b, root_b] = run("b.txt", "b", 11);
  auto [c, root_c] = run("a.txt", "c", 12);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(a1, b);  // same documents, other order: same splits
  EXPECT_NE(a1, c);  // another seed: another split
  EXPECT_EQ(root_a1, root_a2);
  // The root commits to each document's split and place: another order or split, another root.
  EXPECT_NE(root_a1, root_b);
  EXPECT_NE(root_a1, root_c);
}

TEST(Prepare, documents_never_straddle_shards) {
  TempDir dir;
  std::vector<std::string> docs = numbered_documents(30);
  docs.push_back(std::string(100, 'L'));  // longer than a shard: gets one of its own
  write_text(dir / "c.txt", join_with_separators(docs));
  PrepareOptions o;
  o.input = dir / "c.txt";
  o.out = dir / "out";
  o.shard_tokens = 64;
  o.val_fraction = 0.1;
  PrepareReport r = prepare(o);
  EXPECT_GT(r.shards.size(), 4u);
  check_consistent(dir / "out", r);
  Manifest m = read_manifest(dir / "out/manifest.h5");
  size_t oversized = 0;
  for (const ShardEntry& s : m.shards) {
    if (s.tokens > 64) ++oversized;
  }
  EXPECT_EQ(oversized, 1u);
  // Shards are numbered per split, train first in the manifest.
  EXPECT_EQ(m.shards[0].file, "train_000000.bin");
  EXPECT_EQ(m.shards[1].file, "train_000001.bin");
  EXPECT_EQ(m.shards.back().split, kSplitVal);
}

TEST(Prepare, directory_corpus) {
  TempDir dir;
  write_text(dir / "in/b.txt", "bee\n");
  write_text(dir / "in/sub/a.md", "one\n<|endoftext|>\ntwo\n");
  write_text(dir / "in/.DS_Store", "junk");
  PrepareOptions o;
  o.input = dir / "in";
  o.out = dir / "out";
  o.val_fraction = 0.0;
  PrepareReport r = prepare(o);
  EXPECT_EQ(r.format, "dir");
  EXPECT_EQ(r.documents, 3u);
  EXPECT_EQ(r.val_documents, 0u);
  check_consistent(dir / "out", r);
  EXPECT_EQ(documents_from_shards(Dataset::open(dir / "out")),
            (std::vector<std::string>{"bee\n", "one\n", "two\n"}));
  EXPECT_EQ(Dataset::open(dir / "out").val().size(), 0u);
}

// A corpus from elsewhere may hold links to the preparer's own files (a key, its environment):
// only links to files inside the corpus directory are read.
TEST(Prepare, directory_corpus_links_outside_it_are_not_read) {
  TempDir dir;
  write_text(dir / "secret.txt", "the preparer's key\n");
  write_text(dir / "in/b.txt", "bee\n");
  fs::create_symlink(dir / "secret.txt", dir / "in/notes.txt");
  fs::create_symlink("/proc/self/environ", dir / "in/env.txt");
  fs::create_symlink("b.txt", dir / "in/c.txt");  // inside: a copy of b.txt
  PrepareOptions o;
  o.input = dir / "in";
  o.out = dir / "out";
  o.val_fraction = 0.0;
  prepare(o);
  EXPECT_EQ(documents_from_shards(Dataset::open(dir / "out")),
            (std::vector<std::string>{"bee\n", "bee\n"}));
}

TEST(Prepare, jsonl_corpus) {
  TempDir dir;
  std::string lines;
  for (int i = 0; i < 25; ++i)
    lines +=
        "{\"content\": \"line " + std::to_string(i) + "\", \"n\": " + std::to_string(i) + "}\n";
  write_text(dir / "d.jsonl", lines);
  PrepareOptions o;
  o.input = dir / "d.jsonl";
  o.text_field = "content";
  o.out = dir / "out";
  PrepareReport r = prepare(o);
  EXPECT_EQ(r.format, "jsonl");
  EXPECT_EQ(r.documents, 25u);
  check_consistent(dir / "out", r);
  std::vector<std::string> texts = documents_from_shards(Dataset::open(dir / "out"));
  EXPECT_EQ(texts[24], "line 24");
}

// ---------------------------------------------------------------------------------------------
// prepare: refusals and failures

TEST(Prepare, refuses_an_empty_corpus) {
  TempDir dir;
  fs::create_directories(dir / "empty");
  PrepareOptions o;
  o.input = dir / "empty";
  o.format = "dir";
  o.out = dir / "out";
  std::string msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, "no documents found in " + (dir / "empty").string())) << msg;
  EXPECT_FALSE(fs::exists(dir / "out"));

  write_text(dir / "seps.txt", "<|endoftext|>\n<|endoftext|>\n");
  o.input = dir / "seps.txt";
  o.format = "auto";
  msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, "no documents found")) << msg;
  EXPECT_TRUE(contains(msg, "3 empty ones skipped")) << msg;
  EXPECT_FALSE(fs::exists(dir / "out"));
  // No temporary dir is left behind.
  for (auto& e : fs::directory_iterator(dir.path()))
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp-")) << e.path();
}

TEST(Prepare, refuses_to_overwrite_without_force) {
  TempDir dir;
  write_text(dir / "a.txt", join_with_separators(numbered_documents(10)));
  write_text(dir / "b.txt", join_with_separators(numbered_documents(12)));
  PrepareOptions o;
  o.input = dir / "a.txt";
  o.out = dir / "out";
  PrepareReport first = prepare(o);
  o.input = dir / "b.txt";
  std::string msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, "is already prepared; use --force to overwrite")) << msg;
  EXPECT_EQ(read_manifest(dir / "out/manifest.h5").root, first.root);

  o.force = true;
  PrepareReport second = prepare(o);
  EXPECT_NE(second.root, first.root);
  EXPECT_EQ(read_manifest(dir / "out/manifest.h5").root, second.root);
  EXPECT_EQ(second.documents, 12u);
  check_consistent(dir / "out", second);
  EXPECT_FALSE(fs::exists(dir / ("out.old-" + std::to_string(::getpid()))));
}

TEST(Prepare, refuses_outputs_it_must_not_replace) {
  TempDir dir;
  write_text(dir / "a.txt", "doc\n");
  write_text(dir / "busy/notes.txt", "mine");
  PrepareOptions o;
  o.input = dir / "a.txt";
  o.out = dir / "busy";
  o.force = true;
  std::string msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, "is not a prepared dataset")) << msg;
  EXPECT_TRUE(fs::exists(dir / "busy/notes.txt"));

  write_text(dir / "in/x.txt", "doc\n");
  o.input = dir / "in";
  o.out = dir / "in/prepared";
  msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, "overlap")) << msg;
}

TEST(Prepare, a_failure_midway_keeps_the_previous_dataset) {
  TempDir dir;
  write_text(dir / "good.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"text\": \"c\"}\n");
  write_text(dir / "bad.jsonl", "{\"text\": \"x\"}\n{\"text\": \"y\"}\n{oops\n");
  PrepareOptions o;
  o.input = dir / "good.jsonl";
  o.out = dir / "out";
  PrepareReport r = prepare(o);
  o.input = dir / "bad.jsonl";
  o.force = true;
  std::string msg = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(msg, (dir / "bad.jsonl").string() + ":3: invalid JSON")) << msg;
  check_consistent(dir / "out", r);  // the old dataset is untouched and complete
  for (auto& e : fs::directory_iterator(dir.path()))
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp-")) << e.path();
}

// ---------------------------------------------------------------------------------------------
// Dataset::open

// ---------------------------------------------------------------------------------------------
// prepare: the built-in corpus

TEST(Prepare, kjv_default_corpus) {
  TempDir dir;
  PrepareOptions o;
  o.out = dir / "kjv";
  PrepareReport r = prepare(o);
  EXPECT_EQ(r.format, "kjv");
  EXPECT_EQ(r.documents, 1189u);
  EXPECT_EQ(r.skipped_empty, 0u);
  EXPECT_GT(r.val_documents, 30u);  // ~59 expected at 5 %
  EXPECT_LT(r.val_documents, 95u);
  EXPECT_GT(r.train_tokens, 4'000'000u);  // the KJV is about 4.3 MB of text
  check_consistent(dir / "kjv", r);
  Dataset data = Dataset::open(dir / "kjv");
  EXPECT_EQ(data.manifest().source, "kjv");
  // The same corpus prepared twice gives the same root.
  PrepareOptions again = o;
  again.out = dir / "kjv2";
  EXPECT_EQ(prepare(again).root, r.root);
}

}  // namespace
}  // namespace wit::data
