// `wit prepare`: text corpora tokenized into byte-level shards, or llm.c shards adopted as they
// are; then the manifest, then an atomic swap of the finished dir into place.
#include "trainer/data/prepare.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "trainer/data/corpus.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/manifest.h"
#include "trainer/data/shard.h"
#include "trainer/data/split.h"
#include "trainer/data/tokenizer.h"

namespace wit::data {

namespace {

using Progress = std::function<void(const std::string&)>;

constexpr size_t kProgressEvery = 100'000;  // documents between progress lines

void say(const Progress& progress, const std::string& line) {
  if (progress) progress(line);
}

// ---------------------------------------------------------------------------------------------
// Byte-level shards for one split

// The shards of one split, written one after another as documents arrive.
class SplitShards {
 public:
  SplitShards(fs::path dir, uint8_t split, uint64_t shard_tokens, const Progress& progress)
      : dir_(std::move(dir)), split_(split), shard_tokens_(shard_tokens), progress_(progress) {}

  // Appends one document; returns (shard index within this split, token offset in that shard).
  std::pair<uint32_t, uint64_t> add(const std::vector<uint16_t>& tokens) {
    if (!writer_ || (writer_->size() > 0 && writer_->size() + tokens.size() > shard_tokens_))
      start_shard();
    uint64_t offset = writer_->size();
    writer_->append(tokens.data(), tokens.size());
    tokens_ += tokens.size();
    return {uint32_t(entries_.size() - 1), offset};
  }

  // Closes the last shard and returns every shard's entry, with its SHA-256.
  std::vector<ShardEntry> finish() {
    close_shard();
    return std::move(entries_);
  }
  uint64_t tokens() const { return tokens_; }

 private:
  void start_shard() {
    close_shard();
    std::string name = fmt::format("{}_{:06d}.bin", split_name(split_), entries_.size());
    writer_.emplace(dir_ / name);
    entries_.push_back(ShardEntry{name, split_, 0, {}});
  }
  void close_shard() {
    if (!writer_) return;
    writer_->finish();
    ShardEntry& e = entries_.back();
    e.tokens = writer_->size();
    e.sha256 = sha256_file(writer_->path());
    say(progress_, fmt::format("wrote {} ({} tokens)", e.file, e.tokens));
    writer_.reset();
  }

  fs::path dir_;
  uint8_t split_;
  uint64_t shard_tokens_;
  const Progress& progress_;
  std::optional<ShardWriter> writer_;
  std::vector<ShardEntry> entries_;
  uint64_t tokens_ = 0;
};

// Two passes over the corpus: the first hashes every document to decide the splits (which
// depend on all documents, see split.h), the second writes the shards. Only hashes and lengths
// are kept in memory in between.
Manifest prepare_text(const PrepareOptions& o, const std::string& format, const fs::path& tmp,
                      const std::string& input_name, const Gpt2Tokenizer* gpt2,
                      PrepareReport& report, const Progress& progress) {
  std::vector<Digest> shas;
  say(progress, fmt::format("reading documents from {}", input_name));
  read_documents(o.input, format, o.text_field, [&](Document&& d) {
    if (d.text.empty()) {
      ++report.skipped_empty;
      return;
    }
    if (d.text.size() + 1 > kShardMaxTokens)
      fail("{}: document of {} bytes does not fit in one shard (at most {} tokens)", d.source,
           d.text.size(), kShardMaxTokens);
    shas.push_back(sha256(d.text));
    if (shas.size() % kProgressEvery == 0)
      say(progress, fmt::format("hashed {} documents", shas.size()));
  });
  if (shas.empty())
    fail("no documents found in {}{}", input_name,
         report.skipped_empty ? fmt::format(" ({} empty ones skipped)", report.skipped_empty) : "");

  std::vector<uint8_t> splits = assign_splits(shas, o.seed, o.val_fraction);
  SplitShards train(tmp, kSplitTrain, o.shard_tokens, progress);
  SplitShards val(tmp, kSplitVal, o.shard_tokens, progress);
  Manifest m;
  m.documents.reserve(shas.size());
  size_t k = 0;
  read_documents(o.input, format, o.text_field, [&](Document&& d) {
    if (d.text.empty()) return;
    if (k >= shas.size() || sha256(d.text) != shas[k])
      fail("{} changed while it was being prepared (document {}, {})", input_name, k, d.source);
    std::vector<uint16_t> tokens;
    if (gpt2) {
      tokens.push_back(kGpt2Eot);
      const std::vector<uint16_t> body = gpt2->encode(d.text);
      tokens.insert(tokens.end(), body.begin(), body.end());
    } else {
      tokens = encode_document(d.text);
    }
    auto [shard, offset] = (splits[k] == kSplitVal ? val : train).add(tokens);
    m.documents.push_back(DocumentEntry{k, splits[k], shard, offset, tokens.size(), shas[k]});
    ++k;
  });
  if (k != shas.size())
    fail("{} changed while it was being prepared ({} documents, then {})", input_name, shas.size(),
         k);

  report.train_tokens = train.tokens();
  report.val_tokens = val.tokens();
  m.shards = train.finish();
  std::vector<ShardEntry> val_shards = val.finish();
  // Val shards follow the train shards in the manifest.
  uint32_t train_shards = uint32_t(m.shards.size());
  for (DocumentEntry& d : m.documents)
    if (d.split == kSplitVal) d.shard += train_shards;
  m.shards.insert(m.shards.end(), val_shards.begin(), val_shards.end());

  if (gpt2) {
    m.tokenizer = "gpt2";
    m.tokenizer_vocab = gpt2->vocab_digest();
    m.vocab_size = kGpt2VocabSize;
    m.eot_token = kGpt2Eot;
  } else {
    m.tokenizer = "byte";
    m.vocab_size = kByteVocabSize;
    m.eot_token = kByteEot;
  }
  m.split_seed = o.seed;
  m.val_fraction = o.val_fraction;
  m.split_rule = kSplitRuleHash;
  return m;
}

// ---------------------------------------------------------------------------------------------
// llm.c shards

// Splits one split's token stream (its shards, in order) into EOT-started documents.
class SpanCollector {
 public:
  SpanCollector(uint8_t split, std::vector<DocumentEntry>& out) : split_(split), out_(out) {}

  void add_shard(const Shard& shard, uint32_t manifest_index) {
    const uint16_t* t = shard.tokens();
    uint64_t n = shard.size(), segment = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (t[i] >= kGpt2VocabSize)
        fail("{}: token {} at position {} is outside the GPT-2 vocabulary ({} tokens)",
             shard.path().string(), t[i], i, kGpt2VocabSize);
      if (t[i] == kGpt2Eot || !open_) {
        if (open_) {
          extend(t + segment, i - segment);
          close();
        }
        open_ = true;
        current_ = DocumentEntry{0, split_, manifest_index, i, 0, {}};
        hasher_ = Sha256();
        segment = i;
      }
    }
    // The open document runs on into the next shard.
    if (open_) extend(t + segment, n - segment);
  }
  void finish() {
    if (open_) close();
  }

 private:
  void extend(const uint16_t* tokens, uint64_t n) {
    hasher_.update(tokens, n * sizeof(uint16_t));  // the host is little-endian (shard.cpp)
    current_.length += n;
  }
  void close() {
    current_.sha256 = hasher_.finish();
    current_.id = out_.size();
    out_.push_back(current_);
    open_ = false;
  }

  uint8_t split_;
  std::vector<DocumentEntry>& out_;
  bool open_ = false;
  DocumentEntry current_;
  Sha256 hasher_;
};

Manifest prepare_llmc(const PrepareOptions& o, const fs::path& tmp, PrepareReport& report,
                      const Progress& progress) {
  std::vector<fs::path> inputs;
  std::error_code ec;
  if (fs::is_directory(o.input, ec)) {
    fs::directory_iterator it(o.input, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.' || it->path().extension() != ".bin" ||
          !it->is_regular_file())
        continue;
      inputs.push_back(it->path());
    }
    if (ec) fail("cannot list {}: {}", o.input.string(), ec.message());
    std::sort(inputs.begin(), inputs.end());
  } else {
    inputs.push_back(o.input);
  }
  if (inputs.empty()) fail("no documents found in {}: it holds no .bin shards", o.input.string());

  Manifest m;
  // Train shards first, then val, each in name order.
  std::vector<fs::path> ordered[2];
  for (const fs::path& p : inputs)
    ordered[p.filename().string().find("val") != std::string::npos ? kSplitVal : kSplitTrain]
        .push_back(p);
  if (ordered[kSplitTrain].empty())
    fail(
        "no train shards in {}: llm.c shards whose name contains 'val' are the val split, the "
        "others train",
        o.input.string());

  for (uint8_t split : {kSplitTrain, kSplitVal}) {
    SpanCollector spans(split, m.documents);
    for (const fs::path& src : ordered[split]) {
      fs::path dst = tmp / src.filename();
      std::error_code ec;
      fs::create_hard_link(src, dst, ec);
      if (ec) fs::copy_file(src, dst, ec);  // another filesystem: copy instead
      if (ec) fail("cannot copy {} to {}: {}", src.string(), dst.string(), ec.message());
      Shard shard(dst);
      uint32_t index = uint32_t(m.shards.size());
      m.shards.push_back(
          ShardEntry{dst.filename().string(), split, shard.size(), sha256_file(dst)});
      spans.add_shard(shard, index);
      (split == kSplitVal ? report.val_tokens : report.train_tokens) += shard.size();
      say(progress,
          fmt::format("adopted {} ({} tokens, {})", src.string(), shard.size(), split_name(split)));
    }
    spans.finish();
  }
  if (m.documents.empty())
    fail("no documents found in {}: the shards hold no tokens", o.input.string());

  m.tokenizer = "external";
  m.vocab_size = kGpt2VocabSize;
  m.eot_token = kGpt2Eot;
  m.split_seed = o.seed;
  m.val_fraction = 0.0;
  m.split_rule = kSplitRuleFileName;
  return m;
}

// ---------------------------------------------------------------------------------------------
// The output dir

// Refuses outputs that prepare must not replace; returns whether `out` exists.
bool check_output(const PrepareOptions& o, const fs::path& out) {
  if (!o.input.empty() && (path_inside(o.input, out) || path_inside(out, o.input)))
    fail("the output {} and the input {} overlap; prepare into a separate directory", out.string(),
         o.input.string());
  std::error_code ec;
  if (!fs::exists(out, ec)) return false;
  if (!fs::is_directory(out, ec)) fail("{} exists and is not a directory", out.string());
  if (fs::exists(out / kManifestFile, ec)) {
    if (!o.force) fail("{} is already prepared; use --force to overwrite", out.string());
  } else if (!fs::is_empty(out, ec)) {
    fail("{} exists, is not empty, and is not a prepared dataset (no {}); refusing to replace it",
         out.string(), kManifestFile);
  }
  return true;
}

// Moves the finished `tmp` to `out`, replacing a previous `out` only once `tmp` is complete.
void swap_into_place(const fs::path& tmp, const fs::path& out, bool out_exists) {
  std::error_code ec;
  if (!out_exists) {
    fs::rename(tmp, out, ec);
    if (ec) fail("cannot move {} to {}: {}", tmp.string(), out.string(), ec.message());
    return;
  }
  fs::path backup =
      out.parent_path() / (out.filename().string() + ".old-" + std::to_string(::getpid()));
  fs::remove_all(backup, ec);
  fs::rename(out, backup, ec);
  if (ec) fail("cannot move the previous {} aside: {}", out.string(), ec.message());
  fs::rename(tmp, out, ec);
  if (ec) {
    std::error_code restore;
    fs::rename(backup, out, restore);
    fail("cannot move {} to {}: {}", tmp.string(), out.string(), ec.message());
  }
  fs::remove_all(backup, ec);
}

}  // namespace

PrepareReport prepare(const PrepareOptions& o, const Progress& progress) {
  if (o.out.empty()) fail("prepare: no output directory given");
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0))
    fail("prepare: val_fraction must be in [0, 1), got {}", o.val_fraction);
  if (o.shard_tokens < 1 || o.shard_tokens > kShardMaxTokens)
    fail("prepare: shard_tokens must be in [1, {}], got {}", kShardMaxTokens, o.shard_tokens);

  if (o.tokenizer != "byte" && o.tokenizer != "gpt2")
    fail("prepare: tokenizer '{}' is not one of byte, gpt2", o.tokenizer);

  PrepareReport report;
  report.format = resolve_format(o.input, o.format);
  if (report.format == "llmc" && o.tokenizer != "byte")
    fail("prepare: {} holds llm.c shards, which are tokenized already; --tokenizer applies to "
         "text inputs",
         o.input.string());
  // Before anything is written: a missing or altered vocabulary stops here.
  std::unique_ptr<Gpt2Tokenizer> gpt2;
  if (o.tokenizer == "gpt2") gpt2 = Gpt2Tokenizer::load(gpt2_vocab_dir(o.vocab));
  std::error_code ec;
  fs::path out = fs::absolute(o.out, ec).lexically_normal();
  if (ec) fail("prepare: bad output path {}: {}", o.out.string(), ec.message());
  if (!out.has_filename()) out = out.parent_path();  // "data/" -> "data"
  bool out_exists = check_output(o, out);
  std::string input_name = o.input.empty() ? "the built-in King James Bible" : o.input.string();

  fs::create_directories(out.parent_path(), ec);
  if (ec) fail("cannot create {}: {}", out.parent_path().string(), ec.message());
  fs::path tmp =
      out.parent_path() / (out.filename().string() + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec))
    fail("cannot create {}: {}", tmp.string(), ec ? ec.message() : "it already exists");

  Manifest m;
  try {
    m = report.format == "llmc" ? prepare_llmc(o, tmp, report, progress)
                                : prepare_text(o, report.format, tmp, input_name, gpt2.get(), report,
                                               progress);
    m.source = o.input.empty() ? "kjv" : o.input.string();
    m.root = manifest_root(m);
    write_manifest(tmp / kManifestFile, m);  // last: the dir is complete once it exists
    swap_into_place(tmp, out, out_exists);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }

  report.documents = m.documents.size();
  for (const DocumentEntry& d : m.documents)
    (d.split == kSplitVal ? report.val_documents : report.train_documents) += 1;
  for (const ShardEntry& s : m.shards) report.shards.push_back(out / s.file);
  report.root = m.root;  // the caller prints the summary from the report
  return report;
}

}  // namespace wit::data
