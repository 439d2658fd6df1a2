// Opening a prepared data dir: manifest first, then every shard, checked against it.
#include "trainer/data/dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/split.h"

namespace wit::data {

Dataset Dataset::open(const fs::path& dir) {
  fs::path manifest_path = dir / kManifestFile;
  std::error_code ec;
  if (!fs::exists(manifest_path, ec))
    fail("{} is not a prepared dataset (no {}); run wit prepare", dir.string(), kManifestFile);
  Dataset d;
  d.dir_ = dir;
  d.manifest_ = read_manifest(manifest_path);
  std::vector<Shard> shards[2];
  uint64_t split_tokens[2] = {0, 0};
  for (const ShardEntry& e : d.manifest_.shards) {
    Shard shard(dir / e.file);
    if (shard.size() != e.tokens)
      fail("{}: holds {} tokens but {} says {}", shard.path().string(), shard.size(),
           manifest_path.string(), e.tokens);
    d.shard_stream_offset_.push_back(split_tokens[e.split]);
    split_tokens[e.split] += e.tokens;
    shards[e.split].push_back(std::move(shard));
  }
  d.train_ = TokenStream(std::move(shards[kSplitTrain]));
  d.val_ = TokenStream(std::move(shards[kSplitVal]));
  return d;
}

const TokenStream& Dataset::split(uint8_t split) const {
  if (split == kSplitTrain) return train_;
  if (split == kSplitVal) return val_;
  fail("dataset {}: there is no split {}", dir_.string(), split);
}

uint64_t Dataset::stream_offset(const DocumentEntry& document) const {
  if (document.shard >= shard_stream_offset_.size())
    fail("dataset {}: document {} names shard {}, but there are {}", dir_.string(), document.id,
         document.shard, shard_stream_offset_.size());
  return shard_stream_offset_[document.shard] + document.offset;
}

void Dataset::verify_shard_hashes() const {
  for (const ShardEntry& e : manifest_.shards) {
    fs::path path = dir_ / e.file;
    Digest actual = sha256_file(path);
    if (actual != e.sha256)
      fail("{}: SHA-256 is {} but the manifest says {}: the shard changed after prepare",
           path.string(), to_hex(actual), to_hex(e.sha256));
  }
}

namespace {

// One record's tokens, streamed in pieces, against what the record says.
class DocumentCheck {
 public:
  DocumentCheck(const Manifest& m, const Gpt2Tokenizer* gpt2) : m_(m), gpt2_(gpt2) {}

  // `where` names the record; `may_start_mid_document`: an llm.c split's first record.
  void check(const TokenStream& stream, const DocumentEntry& d, uint64_t at,
             bool may_start_mid_document, const std::string& where) const {
    const bool external = m_.tokenizer == "external";
    Sha256 hash;
    char last = 0;  // the previous content byte, for "\r\n" across pieces
    std::vector<uint16_t> piece;
    std::string content;  // a piece's text
    // An llm.c document's tokens after its end-of-text and the bytes they decode to, to compare
    // with GPT-2's encoding of those bytes (the tokens wit query hashes for its text).
    std::vector<uint16_t> body;
    std::string body_text;
    bool whole = false;  // the record begins with its end-of-text token
    for (uint64_t done = 0; done < d.length;) {
      const uint64_t n = std::min<uint64_t>(d.length - done, 1 << 20);
      piece.resize(n);
      stream.read(at + done, n, piece.data());
      content.clear();
      for (uint64_t i = 0; i < n; ++i) {
        const uint16_t t = piece[i];
        const uint64_t k = done + i;  // the token's place in the record
        if (t >= m_.vocab_size)
          fail("{}: token {} is {}, outside the vocabulary of {}", where, k, t, m_.vocab_size);
        if (k == 0 && t != m_.eot_token && !may_start_mid_document)
          fail("{}: does not begin with the end-of-text token {} (it begins with {})", where,
               m_.eot_token, t);
        if (k > 0 && t == m_.eot_token)
          fail("{}: holds the end-of-text token at its token {}: one record covers two "
               "documents, so the second could not be found by its own hash",
               where, k);
        if (k == 0) whole = t == m_.eot_token;
        if (external) {
          if (whole && k > 0) {
            body.push_back(t);
            body_text += gpt2_->token_bytes(t);
          }
          continue;
        }
        if (k == 0 && t == m_.eot_token) continue;
        const size_t from = content.size();
        if (gpt2_)
          content += gpt2_->token_bytes(t);
        else
          content.push_back(char(t));
        for (size_t c = from; c < content.size(); ++c) {
          if (last == '\r' && content[c] == '\n')
            fail("{}: its text holds \"\\r\\n\" (at token {}), which canonical bytes never do: "
                 "no document read by wit query could hash to it",
                 where, k);
          last = content[c];
        }
      }
      if (external)
        hash.update(piece.data(), n * sizeof(uint16_t));  // little-endian, as shards are
      else
        hash.update(content);
      done += n;
    }
    const Digest got = hash.finish();
    if (got != d.sha256)
      fail("{}: its tokens {} SHA-256 {}, but the record says {}: the record does not say what "
           "was trained",
           where, external ? "have" : "decode to text of", to_hex(got), to_hex(d.sha256));
    if (external && whole) check_encoding(body, body_text, where);
  }

 private:
  // wit query finds an llm.c document by [end-of-text] + GPT-2's encoding of its text, so the
  // tokens must be that encoding: any other tokenization of the same text would hide it.
  void check_encoding(const std::vector<uint16_t>& body, const std::string& text,
                      const std::string& where) const {
    const std::vector<uint16_t> canonical = gpt2_->encode(text);
    if (canonical == body) return;
    size_t k = 0;
    while (k < body.size() && k < canonical.size() && body[k] == canonical[k]) ++k;
    const auto token = [](const std::vector<uint16_t>& v, size_t i) {
      return i < v.size() ? std::to_string(v[i]) : std::string("the end");
    };
    fail("{}: its tokens are not GPT-2's encoding of the text they decode to (at token {} it "
         "holds {} where the encoding has {}): wit query, which encodes a document's text, "
         "could not find it",
         where, k + 1, token(body, k), token(canonical, k));
  }

  const Manifest& m_;
  const Gpt2Tokenizer* gpt2_;
};

}  // namespace

void Dataset::check_tokenizer_label(const fs::path& gpt2_vocab) const {
  if (manifest_.tokenizer == "gpt2") return;  // in the layout digest
  const std::string file = (dir_ / kManifestFile).string();
  std::unique_ptr<Gpt2Tokenizer> gpt2;
  if (manifest_.tokenizer == "external") gpt2 = Gpt2Tokenizer::load(gpt2_vocab_dir(gpt2_vocab));
  const DocumentCheck check(manifest_, gpt2.get());
  for (uint8_t s : {kSplitTrain, kSplitVal}) {
    const DocumentEntry* first = nullptr;
    for (const DocumentEntry& d : manifest_.documents)
      if (d.split == s && stream_offset(d) == 0) {
        first = &d;
        break;
      }
    if (!first) continue;
    for (size_t i = 0; i < manifest_.shards.size(); ++i) {
      const ShardEntry& e = manifest_.shards[i];
      if (e.split != s || shard_stream_offset_[i] >= first->length) continue;
      if (sha256_file(dir_ / e.file) != e.sha256)
        fail("{}: SHA-256 does not match the manifest: the shard changed after prepare",
             (dir_ / e.file).string());
    }
    try {
      check.check(split(s), *first, 0, manifest_.tokenizer == "external",
                  fmt::format("document {}", first->id));
    } catch (const Error& e) {
      fail("{}: labelled '{}' data, but its first {} record does not hash that way ({}): the "
           "label is not the one the dataset was made with, and text queries would miss every "
           "document",
           file, manifest_.tokenizer, split_name(s), e.what());
    }
  }
}

uint64_t Dataset::verify_documents(const fs::path& gpt2_vocab, int part, int parts) const {
  if (parts < 1 || part < 0 || part >= parts)
    fail("verify_documents: part {} of {} does not exist", part, parts);
  const std::string file = (dir_ / kManifestFile).string();
  std::unique_ptr<Gpt2Tokenizer> gpt2;
  if (manifest_.tokenizer == "gpt2" || manifest_.tokenizer == "external") {
    gpt2 = Gpt2Tokenizer::load(gpt2_vocab_dir(gpt2_vocab));
    if (manifest_.tokenizer == "gpt2" && gpt2->vocab_digest() != manifest_.tokenizer_vocab)
      fail("{}: tokenized with the GPT-2 vocabulary {}, but the one installed here is {}",
           file, to_hex(manifest_.tokenizer_vocab).substr(0, 16),
           to_hex(gpt2->vocab_digest()).substr(0, 16));
  } else if (manifest_.tokenizer != "byte") {
    fail("{}: tokenizer '{}' is none that wit knows (byte, gpt2, external)", file,
         manifest_.tokenizer);
  }
  const DocumentCheck check(manifest_, gpt2.get());
  uint64_t fragment_tokens = 0;
  for (uint8_t s : {kSplitTrain, kSplitVal}) {
    std::vector<std::pair<uint64_t, const DocumentEntry*>> records;  // (stream offset, record)
    for (const DocumentEntry& d : manifest_.documents)
      if (d.split == s) records.push_back({stream_offset(d), &d});
    std::sort(records.begin(), records.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const TokenStream& stream = split(s);
    uint64_t covered = 0;  // the stream's tokens [0, covered) are in a checked record
    size_t index = 0;      // the record's place in its split, which decides its part
    for (const auto& [at, d] : records) {
      const auto where = [&, at = at, d = d] {
        return fmt::format("{}: document {} ({} split, tokens {} to {})", file, d->id,
                           split_name(s), at, at + d->length);
      };
      if (at != covered)
        fail("{}: {} where the records before it end at token {}: the records must cover the "
             "split's tokens exactly once",
             where(), at < covered ? "overlaps them" : "leaves a gap", covered);
      if (d->length == 0 || d->length > stream.size() - at)
        fail("{}: {} tokens, but the split has {}", where(), d->length, stream.size());
      const bool may_start_mid_document = manifest_.tokenizer == "external" && at == 0;
      if (may_start_mid_document) {
        uint16_t first = 0;
        stream.read(0, 1, &first);
        if (first != manifest_.eot_token) fragment_tokens += d->length;
      }
      if (index++ % size_t(parts) == size_t(part))
        check.check(stream, *d, at, may_start_mid_document, where());
      covered = at + d->length;
    }
    if (covered != stream.size())
      fail("{}: the {} split's records cover its first {} tokens of {}: the rest is in no record",
           file, split_name(s), covered, stream.size());
  }
  return fragment_tokens;
}

}  // namespace wit::data
