// GPT-2's tokenizer: ids pinned for fixed inputs (taken from tiktoken's gpt2 encoding, so the
// exactness does not rest on node alone), decoding gives back any bytes, the vocabulary files
// are checked, and `wit prepare --tokenizer gpt2` writes [50256] + the document's ids and
// records the tokenizer in the manifest and the data layout.
#include "trainer/data/gpt2_tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "core/error.h"
#include "tests/data/temp_dir.h"
#include "trainer/data/dataset.h"
#include "trainer/data/manifest.h"
#include "trainer/data/prepare.h"

namespace wit::data {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

const Gpt2Tokenizer& gpt2() {
  static const std::unique_ptr<Gpt2Tokenizer> t = Gpt2Tokenizer::load(gpt2_vocab_dir({}));
  return *t;
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

TEST(Gpt2Tokenizer, IdsAreTiktokensForFixedInputs) {
  using V = std::vector<uint16_t>;
  EXPECT_EQ(gpt2().encode("Hello world"), (V{15496, 995}));
  EXPECT_EQ(gpt2().encode("It's 2026: naïve café 日本語 👍🏽"),
            (V{1026, 338, 1160, 2075, 25, 41492, 40304, 10545, 245, 98, 17312, 105, 45739, 252,
               50169, 235, 8582, 237, 121}));
  EXPECT_EQ(gpt2().encode("  two  spaces\n\nnewlines\t\ttabs"),
            (V{220, 734, 220, 9029, 198, 198, 3605, 6615, 197, 197, 8658, 82}));
  // The end-of-text marker in text is ordinary characters, never token 50256.
  EXPECT_EQ(gpt2().encode("<|endoftext|>"), (V{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(gpt2().encode(""), V{});
}

TEST(Gpt2Tokenizer, InvalidUtf8BytesAreTokensOfTheirOwn) {
  // "a" 0xff "b": the valid stretches as text, the stray byte as its one-byte token.
  const std::vector<uint16_t> ids = gpt2().encode(std::string("a\xff" "b", 3));
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], gpt2().encode("a")[0]);
  EXPECT_EQ(gpt2().token_bytes(ids[1]), std::string("\xff", 1));
  EXPECT_EQ(ids[2], gpt2().encode("b")[0]);
}

TEST(Gpt2Tokenizer, DecodingGivesBackAnyBytes) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string bytes(size_t(rng() % 64), '\0');
    for (char& c : bytes) {
      // Mostly text-like bytes, with UTF-8 lead and continuation bytes and controls mixed in.
      const uint64_t r = rng() % 10;
      c = char(r < 6 ? 'a' + rng() % 26 : r < 7 ? ' ' : r < 8 ? 0x80 + rng() % 64 : rng() % 256);
    }
    const std::vector<uint16_t> ids = gpt2().encode(bytes);
    EXPECT_EQ(gpt2().decode(ids.data(), ids.size()), bytes) << "round " << round;
  }
  const uint16_t eot = kGpt2Eot;
  EXPECT_EQ(gpt2().decode(&eot, 1), "<|endoftext|>");
  const uint16_t outside = 50257;
  EXPECT_TRUE(contains(error_of([&] { gpt2().decode(&outside, 1); }), "outside the vocabulary"));
}

TEST(Gpt2Tokenizer, AMissingOrAlteredVocabularySaysHowToInstallIt) {
  TempDir dir;
  std::string e = error_of([&] { Gpt2Tokenizer::load(dir.path()); });
  EXPECT_TRUE(contains(e, "gpt2.tiktoken")) << e;
  EXPECT_TRUE(contains(e, "launch/install-deps")) << e;

  const fs::path real = gpt2_vocab_dir({});
  std::string ranks;
  {
    std::ifstream in(real / "gpt2.tiktoken", std::ios::binary);
    ranks.assign(std::istreambuf_iterator<char>(in), {});
  }
  ranks[ranks.size() / 2] ^= 1;
  write_file(dir.path() / "gpt2.tiktoken", ranks);
  e = error_of([&] { Gpt2Tokenizer::load(dir.path()); });
  EXPECT_TRUE(contains(e, "gpt2.tiktoken has SHA-256")) << e;
  EXPECT_TRUE(contains(e, kGpt2RanksSha256)) << e;
}

TEST(Gpt2Tokenizer, TheManifestIdentityIsTheOneGpt2sFirstFilesGave) {
  // Manifests prepared when the vocabulary came as encoder.json and vocab.bpe keep their digest.
  EXPECT_EQ(to_hex(gpt2().vocab_digest()),
            "cd558a23a8740eb92e36bdd8172d66c9bda2367ed6d73d09b187d597a606b0e7");
}

TEST(Gpt2Prepare, ShardsHoldEotAndEachDocumentsIdsAndTheManifestRecordsTheVocabulary) {
  TempDir dir;
  const std::vector<std::string> docs = {"In the beginning God created the heaven and the earth.",
                                         "Ünïcödé, 日本語 and emoji 👍 — it's fine.\n",
                                         "numbers 12345 and   spaces\t\n"};
  write_file(dir.path() / "in.txt",
             docs[0] + "\n<|endoftext|>\n" + docs[1] + "<|endoftext|>\n" + docs[2]);
  PrepareOptions o;
  o.input = dir.path() / "in.txt";
  o.out = dir.path() / "gpt2";
  o.tokenizer = "gpt2";
  o.val_fraction = 0;
  prepare(o);
  const Dataset data = Dataset::open(o.out);
  const Manifest& m = data.manifest();
  EXPECT_EQ(m.tokenizer, "gpt2");
  EXPECT_EQ(m.vocab_size, 50257);
  EXPECT_EQ(m.eot_token, 50256);
  EXPECT_EQ(m.tokenizer_vocab, gpt2().vocab_digest());
  ASSERT_EQ(m.documents.size(), docs.size());
  for (const DocumentEntry& d : m.documents) {
    std::vector<uint16_t> tokens(d.length);
    data.split(d.split).read(data.stream_offset(d), d.length, tokens.data());
    EXPECT_EQ(tokens[0], kGpt2Eot);
    const std::string text = gpt2().decode(tokens.data() + 1, tokens.size() - 1);
    const auto it = std::find_if(docs.begin(), docs.end(), [&](const std::string& doc) {
      return text == doc || text + "\n" == doc || text == doc + "\n";
    });
    ASSERT_NE(it, docs.end()) << text;
    EXPECT_EQ(std::vector<uint16_t>(tokens.begin() + 1, tokens.end()), gpt2().encode(text));
  }
  data.verify_documents();  // every record's hash is that of the text its tokens decode to
  // The same corpus with the byte tokenizer lays out differently, and an edited vocabulary
  // digest in the manifest changes the layout the run commits to.
  o.out = dir.path() / "byte";
  o.tokenizer = "byte";
  prepare(o);
  EXPECT_NE(layout_digest(Dataset::open(o.out).manifest()), layout_digest(m));
  Manifest edited = m;
  edited.tokenizer_vocab[0] ^= 1;
  EXPECT_NE(layout_digest(edited), layout_digest(m));
}

TEST(Gpt2Prepare, RefusesAnUnknownTokenizerAndAMissingVocabularyBeforeWritingAnything) {
  TempDir dir;
  write_file(dir.path() / "in.txt", "text");
  PrepareOptions o;
  o.input = dir.path() / "in.txt";
  o.out = dir.path() / "out";
  o.tokenizer = "sentencepiece";
  EXPECT_TRUE(contains(error_of([&] { prepare(o); }), "not one of byte, gpt2"));
  o.tokenizer = "gpt2";
  o.vocab = dir.path() / "no-such-dir";
  const std::string e = error_of([&] { prepare(o); });
  EXPECT_TRUE(contains(e, "launch/install-deps")) << e;
  EXPECT_FALSE(fs::exists(o.out));
}

}  // namespace
}  // namespace wit::data
