// Dataset manifest: HDF5 layout (see manifest.h), validation, and the Merkle root.
#include "trainer/data/manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/h5.h"
#include "core/merkle.h"
#include "trainer/data/shard.h"
#include "trainer/data/split.h"

namespace wit::data {

namespace {

void fsync_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open {} to sync it: {}", path.string(), std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) fail("cannot sync {}: {}", path.string(), std::strerror(err));
}

void write_manifest_h5(const fs::path& path, const Manifest& m) {
  h5::File f = h5::File::create(path);
  f.set_int_attr("format_version", m.format_version);
  f.set_string_attr("tokenizer", m.tokenizer);
  f.set_int_attr("vocab_size", m.vocab_size);
  f.set_int_attr("eot_token", m.eot_token);
  f.set_uint_attr("split_seed", m.split_seed);
  f.set_double_attr("val_fraction", m.val_fraction);
  f.set_string_attr("split_rule", m.split_rule);
  f.set_string_attr("source", m.source);
  f.set_string_attr("root", to_hex(m.root));
  if (m.tokenizer == "gpt2") f.set_string_attr("tokenizer_vocab", to_hex(m.tokenizer_vocab));

  size_t s = m.shards.size();
  std::vector<std::string> files(s);
  std::vector<uint8_t> shard_split(s);
  std::vector<uint64_t> shard_tokens(s);
  std::vector<Digest> shard_sha(s);
  for (size_t i = 0; i < s; ++i) {
    files[i] = m.shards[i].file;
    shard_split[i] = m.shards[i].split;
    shard_tokens[i] = m.shards[i].tokens;
    shard_sha[i] = m.shards[i].sha256;
  }
  h5::Group shards = f.create_group("shards");
  shards.write_strings("file", files);
  shards.write("split", shard_split);
  shards.write("tokens", shard_tokens);
  shards.write_digests("sha256", shard_sha);

  size_t d = m.documents.size();
  std::vector<uint64_t> id(d), offset(d), length(d);
  std::vector<uint8_t> split(d);
  std::vector<uint32_t> shard(d);
  std::vector<Digest> sha(d);
  for (size_t i = 0; i < d; ++i) {
    const DocumentEntry& e = m.documents[i];
    id[i] = e.id;
    split[i] = e.split;
    shard[i] = e.shard;
    offset[i] = e.offset;
    length[i] = e.length;
    sha[i] = e.sha256;
  }
  h5::Group docs = f.create_group("documents");
  docs.write("id", id);
  docs.write("split", split);
  docs.write("shard", shard);
  docs.write("offset", offset);
  docs.write("length", length);
  docs.write_digests("sha256", sha);
  f.flush();
}

int int_attr_in_range(const h5::File& f, const char* name) {
  int64_t v = f.int_attr(name);
  if (v < INT32_MIN || v > INT32_MAX)
    fail("{}: attribute {} = {} is out of range", f.file_path(), name, v);
  return static_cast<int>(v);
}

template <typename T>
void check_length(const std::string& where, const char* name, const std::vector<T>& v,
                  size_t expected, const char* reference) {
  if (v.size() != expected)
    fail("{}: {} has {} entries but {} has {}", where, name, v.size(), reference, expected);
}

}  // namespace

Digest record_digest(const DocumentRecord& r) {
  Sha256 h;
  h.update("wit-document-v2").update(r.sha256.data(), r.sha256.size());
  return h.update_u64(r.split).update_u64(r.stream_offset).update_u64(r.length).finish();
}

bool record_before(const DocumentRecord& a, const DocumentRecord& b) {
  return std::tie(a.sha256, a.split, a.stream_offset, a.length) <
         std::tie(b.sha256, b.split, b.stream_offset, b.length);
}

DocumentTree document_tree(const Manifest& m) {
  DocumentTree t;
  std::vector<uint64_t> shard_start;
  for (auto& sh : m.shards) {
    const uint8_t split = sh.split ? 1 : 0;
    shard_start.push_back(t.split_tokens[split]);
    t.split_tokens[split] += sh.tokens;
  }
  std::vector<std::pair<DocumentRecord, uint64_t>> all;
  all.reserve(m.documents.size());
  for (const DocumentEntry& d : m.documents) {
    if (d.shard >= shard_start.size())
      fail("document {} names shard {}, but there are {}", d.id, d.shard, shard_start.size());
    all.push_back({{d.sha256, d.split, shard_start[d.shard] + d.offset, d.length}, d.id});
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return record_before(a.first, b.first); });
  for (auto& [r, id] : all) {
    t.records.push_back(r);
    t.ids.push_back(id);
    t.leaves.push_back(record_digest(r));
  }
  return t;
}

Digest manifest_root_from(const Digest& tree_root, uint64_t documents, uint64_t train_tokens,
                          uint64_t val_tokens) {
  Sha256 h;
  h.update("wit-manifest-v2").update_u64(documents).update(tree_root.data(), tree_root.size());
  return h.update_u64(train_tokens).update_u64(val_tokens).finish();
}

Digest manifest_root(const Manifest& m) {
  const DocumentTree t = document_tree(m);
  return manifest_root_from(merkle_root(t.leaves), t.records.size(), t.split_tokens[0],
                            t.split_tokens[1]);
}

Digest layout_digest(const Manifest& m) {
  Sha256 h;
  h.update("wit-data-layout-v1").update_u64(m.shards.size());
  for (const ShardEntry& s : m.shards)
    h.update_u64(s.split).update_u64(s.tokens).update(s.sha256.data(), s.sha256.size());
  h.update_u64(m.documents.size());
  for (const DocumentEntry& d : m.documents)
    h.update_u64(d.split).update_u64(d.shard).update_u64(d.offset).update_u64(d.length).update(
        d.sha256.data(), d.sha256.size());
  // GPT-2-tokenized text: the vocabulary is part of the layout (older layouts keep their digest).
  if (m.tokenizer == "gpt2")
    h.update("tokenizer gpt2").update(m.tokenizer_vocab.data(), m.tokenizer_vocab.size());
  return h.finish();
}

void validate_manifest(const Manifest& m, const std::string& where) {
  if (m.format_version != kManifestFormatVersion)
    fail("{}: unsupported manifest format_version {} (this wit reads version {})", where,
         m.format_version, kManifestFormatVersion);
  if (m.tokenizer != "byte" && m.tokenizer != "gpt2" && m.tokenizer != "external")
    fail("{}: tokenizer is '{}', expected 'byte', 'gpt2' or 'external'", where, m.tokenizer);
  if (m.vocab_size < 1 || m.vocab_size > 65536)
    fail("{}: vocab_size {} does not fit uint16 tokens (1..65536)", where, m.vocab_size);
  if (m.eot_token < 0 || m.eot_token >= m.vocab_size)
    fail("{}: eot_token {} is outside the vocabulary of {} tokens", where, m.eot_token,
         m.vocab_size);
  if (m.tokenizer == "byte" && (m.vocab_size != 257 || m.eot_token != 256))
    fail("{}: the byte tokenizer has vocab_size 257 and eot_token 256, manifest says {} and {}",
         where, m.vocab_size, m.eot_token);
  // external: llm.c's uint16 shards, GPT-2-tokenized; wit query encodes text with GPT-2 for them.
  if (m.tokenizer != "byte" && (m.vocab_size != 50257 || m.eot_token != 50256))
    fail("{}: the {} tokenizer has vocab_size 50257 and eot_token 50256, manifest says {} and {}",
         where, m.tokenizer, m.vocab_size, m.eot_token);
  if (!(m.val_fraction >= 0.0 && m.val_fraction < 1.0))
    fail("{}: val_fraction {} is not in [0, 1)", where, m.val_fraction);
  if (m.split_rule != kSplitRuleHash && m.split_rule != kSplitRuleFileName)
    fail("{}: split_rule is '{}', expected '{}' or '{}'", where, m.split_rule, kSplitRuleHash,
         kSplitRuleFileName);

  // Shards: plain file names inside the data dir, so a manifest cannot point elsewhere.
  std::set<std::string> names;
  std::vector<uint64_t> split_start(m.shards.size());  // shard's first token within its split
  uint64_t split_total[2] = {0, 0};
  for (size_t i = 0; i < m.shards.size(); ++i) {
    const ShardEntry& s = m.shards[i];
    if (s.file.empty() || s.file == "." || s.file == ".." ||
        s.file.find('/') != std::string::npos || s.file.find('\0') != std::string::npos)
      fail("{}: shards/file[{}] = '{}' is not a plain file name", where, i, s.file);
    if (!names.insert(s.file).second)
      fail("{}: shards/file[{}] = '{}' is listed twice", where, i, s.file);
    if (s.split > kSplitVal) fail("{}: shards/split[{}] = {} is not 0 or 1", where, i, s.split);
    if (s.tokens > kShardMaxTokens)
      fail("{}: shards/tokens[{}] = {} exceeds the shard limit", where, i, s.tokens);
    split_start[i] = split_total[s.split];
    split_total[s.split] += s.tokens;
  }

  for (size_t i = 0; i < m.documents.size(); ++i) {
    const DocumentEntry& d = m.documents[i];
    if (d.id != i)
      fail("{}: documents/id[{}] = {}, expected {} (ids are row numbers)", where, i, d.id, i);
    if (d.split > kSplitVal) fail("{}: documents/split[{}] = {} is not 0 or 1", where, i, d.split);
    if (d.shard >= m.shards.size())
      fail("{}: documents/shard[{}] = {} but there are {} shards", where, i, d.shard,
           m.shards.size());
    const ShardEntry& s = m.shards[d.shard];
    if (s.split != d.split)
      fail("{}: document {} is {} but its shard {} ({}) is {}", where, i, split_name(d.split),
           d.shard, s.file, split_name(s.split));
    if (d.length == 0) fail("{}: documents/length[{}] is 0", where, i);
    if (d.offset >= s.tokens)
      fail("{}: documents/offset[{}] = {} is beyond shard {} ({}, {} tokens)", where, i, d.offset,
           d.shard, s.file, s.tokens);
    // The start is within the split (offset < the shard's tokens); the length may be anything,
    // so it is compared with what is left rather than added (a sum could wrap).
    const uint64_t start = split_start[d.shard] + d.offset;
    if (d.length > split_total[d.split] - start)
      fail(
          "{}: document {} (offset {}, length {} in shard {}) runs past the end of the {} "
          "split ({} tokens)",
          where, i, d.offset, d.length, s.file, split_name(d.split), split_total[d.split]);
  }

  Digest root = manifest_root(m);
  if (root != m.root)
    fail(
        "{}: Merkle root mismatch: the manifest says {} but its documents and shards give {} "
        "(a document's hash, split or place was altered, or documents were added or removed)",
        where, to_hex(m.root), to_hex(root));
}

void write_manifest(const fs::path& path, const Manifest& m) {
  validate_manifest(m, path.string() + " (being written)");
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  try {
    std::error_code gone;
    fs::remove(tmp, gone);  // a stale temporary, or a link: HDF5 would write through it
    write_manifest_h5(tmp, m);  // every HDF5 handle is closed when this returns
    fsync_file(tmp);
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) fail("cannot move {} into place: {}", path.string(), ec.message());
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

Manifest read_manifest(const fs::path& path) {
  std::string where = path.string();
  h5::File f = h5::File::open_read(path);
  Manifest m;
  m.format_version = int_attr_in_range(f, "format_version");
  if (m.format_version != kManifestFormatVersion)
    fail("{}: unsupported manifest format_version {} (this wit reads version {})", where,
         m.format_version, kManifestFormatVersion);
  m.tokenizer = f.string_attr("tokenizer");
  m.vocab_size = int_attr_in_range(f, "vocab_size");
  m.eot_token = int_attr_in_range(f, "eot_token");
  m.split_seed = f.uint_attr("split_seed");
  m.val_fraction = f.double_attr("val_fraction");
  m.split_rule = f.string_attr("split_rule");
  m.source = f.string_attr("source");
  m.root = digest_from_hex(f.string_attr("root"), where + ": attribute root");
  if (m.tokenizer == "gpt2") {
    if (!f.has_attr("tokenizer_vocab"))
      fail("{}: tokenizer gpt2 without the attribute tokenizer_vocab", where);
    m.tokenizer_vocab =
        digest_from_hex(f.string_attr("tokenizer_vocab"), where + ": attribute tokenizer_vocab");
  }

  h5::Group shards = f.open_group("shards");
  std::vector<std::string> files = shards.read_strings("file");
  std::vector<uint8_t> shard_split = shards.read<uint8_t>("split");
  std::vector<uint64_t> shard_tokens = shards.read<uint64_t>("tokens");
  std::vector<Digest> shard_sha = shards.read_digests("sha256");
  size_t s = files.size();
  check_length(where, "shards/split", shard_split, s, "shards/file");
  check_length(where, "shards/tokens", shard_tokens, s, "shards/file");
  check_length(where, "shards/sha256", shard_sha, s, "shards/file");
  m.shards.resize(s);
  for (size_t i = 0; i < s; ++i)
    m.shards[i] = ShardEntry{files[i], shard_split[i], shard_tokens[i], shard_sha[i]};

  h5::Group docs = f.open_group("documents");
  std::vector<uint64_t> id = docs.read<uint64_t>("id");
  std::vector<uint8_t> split = docs.read<uint8_t>("split");
  std::vector<uint32_t> shard = docs.read<uint32_t>("shard");
  std::vector<uint64_t> offset = docs.read<uint64_t>("offset");
  std::vector<uint64_t> length = docs.read<uint64_t>("length");
  std::vector<Digest> sha = docs.read_digests("sha256");
  size_t d = id.size();
  check_length(where, "documents/split", split, d, "documents/id");
  check_length(where, "documents/shard", shard, d, "documents/id");
  check_length(where, "documents/offset", offset, d, "documents/id");
  check_length(where, "documents/length", length, d, "documents/id");
  check_length(where, "documents/sha256", sha, d, "documents/id");
  m.documents.resize(d);
  for (size_t i = 0; i < d; ++i)
    m.documents[i] = DocumentEntry{id[i], split[i], shard[i], offset[i], length[i], sha[i]};

  validate_manifest(m, where);
  return m;
}

}  // namespace wit::data
