// GPT-2's byte-level BPE: pattern pieces (PCRE2, JIT-compiled), byte-pair merges by rank.
#include "trainer/data/gpt2_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "core/error.h"

#ifndef WIT_GPT2_VOCAB_DIR
#define WIT_GPT2_VOCAB_DIR ""
#endif

namespace wit::data {

namespace fs = std::filesystem;

const char* const kGpt2RanksSha256 =
    "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930";
const char* const kGpt2EncoderSha256 =
    "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783";
const char* const kGpt2MergesSha256 =
    "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5";

namespace {

constexpr const char* kInstallHint =
    "install GPT-2's vocabulary with launch/install-deps (it takes gpt2.tiktoken from the PyPI "
    "package openai-whisper into deps/gpt2), or point --vocab or WIT_GPT2_VOCAB at a directory "
    "holding gpt2.tiktoken";

// GPT-2's pattern. \s and \S are spelled out as Unicode's White_Space set (what the reference
// implementation's \s means), so the split does not depend on PCRE2's own reading of \s.
#define WIT_WS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
constexpr const char* kPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WIT_WS "\\p{L}\\p{N}]+|[" WIT_WS
    "]+(?![^" WIT_WS "])|[" WIT_WS "]+";
#undef WIT_WS

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();

// Standard base64 (RFC 4648, padded), as the rank file spells each token's bytes.
std::string base64_decode(std::string_view in) {
  static const auto value = [] {
    std::array<int8_t, 256> v{};
    v.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) v[static_cast<unsigned char>(alphabet[i])] = int8_t(i);
    return v;
  }();
  WIT_CHECK(!in.empty() && in.size() % 4 == 0, "gpt2.tiktoken: base64 token of length {}", in.size());
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '=') {
      WIT_CHECK(i + 2 >= in.size(), "gpt2.tiktoken: '=' inside a base64 token");
      break;
    }
    const int8_t d = value[static_cast<unsigned char>(c)];
    WIT_CHECK(d >= 0, "gpt2.tiktoken: byte {} is not base64", int(static_cast<unsigned char>(c)));
    acc = (acc << 6) | uint32_t(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte there does not start one.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto c = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = c(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if (b >= 0xC2 && b <= 0xDF) n = 2, cp = b & 0x1F;
  else if (b >= 0xE0 && b <= 0xEF) n = 3, cp = b & 0x0F;
  else if (b >= 0xF0 && b <= 0xF4) n = 4, cp = b & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((c(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;  // overlong, out of range, or a surrogate
  return n;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot read {}: {}", file.string(), kInstallHint);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

struct Gpt2Tokenizer::Impl {
  std::vector<std::string> bytes_of;                    // id -> token bytes
  std::unordered_map<std::string_view, uint32_t> rank;  // token bytes -> id (views into bytes_of)
  uint16_t byte_token[256] = {};
  Digest digest{};
  pcre2_code* re = nullptr;
  pcre2_match_data* match = nullptr;
  // Pieces seen before: text repeats its words, and a merge costs far more than a lookup.
  mutable std::unordered_map<std::string, std::vector<uint16_t>> cache;

  ~Impl() {
    if (match) pcre2_match_data_free(match);
    if (re) pcre2_code_free(re);
  }

  uint32_t rank_of(std::string_view bytes) const {
    auto it = rank.find(bytes);
    return it == rank.end() ? kNoRank : it->second;
  }

  // Pieces longer than this are merged with a heap (merge_long) and never cached: scanning every
  // pair for each join costs the square of a piece's length (a megabyte of letters is one piece).
  static constexpr size_t kShortPiece = 256;

  // Byte-pair merging of one piece: repeatedly join the adjacent pair whose joined bytes have
  // the lowest rank (the leftmost on ties) until no joined pair is a token.
  void merge(std::string_view piece, std::vector<uint16_t>& out) const {
    if (piece.size() == 1) {
      out.push_back(byte_token[static_cast<unsigned char>(piece[0])]);
      return;
    }
    if (const uint32_t whole = rank_of(piece); whole != kNoRank) {
      out.push_back(uint16_t(whole));
      return;
    }
    if (piece.size() > kShortPiece) return merge_long(piece, out);
    if (auto it = cache.find(std::string(piece)); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
    // start[k]: where part k begins; pair[k]: rank of parts k and k+1 joined.
    std::vector<size_t> start(piece.size() + 1);
    for (size_t k = 0; k <= piece.size(); ++k) start[k] = k;
    std::vector<uint32_t> pair(piece.size(), kNoRank);
    const auto joined = [&](size_t k) {  // parts k and k+1 of the current split
      return k + 2 < start.size() ? rank_of(piece.substr(start[k], start[k + 2] - start[k]))
                                  : kNoRank;
    };
    for (size_t k = 0; k + 1 < piece.size(); ++k) pair[k] = joined(k);
    for (;;) {
      size_t best = 0;
      uint32_t best_rank = kNoRank;
      for (size_t k = 0; k + 1 < pair.size(); ++k)
        if (pair[k] < best_rank) best_rank = pair[k], best = k;
      if (best_rank == kNoRank) break;
      start.erase(start.begin() + std::ptrdiff_t(best) + 1);
      pair.erase(pair.begin() + std::ptrdiff_t(best) + 1);
      pair[best] = joined(best);
      if (best > 0) pair[best - 1] = joined(best - 1);
    }
    std::vector<uint16_t> tokens;
    for (size_t k = 0; k + 1 < start.size(); ++k)
      tokens.push_back(uint16_t(rank_of(piece.substr(start[k], start[k + 1] - start[k]))));
    out.insert(out.end(), tokens.begin(), tokens.end());
    if (cache.size() > 1'000'000) cache.clear();  // bounded memory on any corpus
    cache.emplace(std::string(piece), std::move(tokens));
  }

  // The same joins as merge, in O(n log n): parts form a linked list, and a heap holds every
  // adjacent pair by (rank, where it begins), so the pair it yields first is the lowest-ranked,
  // leftmost one. A join changes only its two neighbouring pairs; entries for pairs that no
  // longer exist are recognised by the parts' versions and skipped.
  void merge_long(std::string_view piece, std::vector<uint16_t>& out) const {
    const size_t n = piece.size();
    std::vector<size_t> next(n), prev(n), version(n, 0);  // part k begins at byte k
    std::vector<bool> alive(n, true);
    for (size_t k = 0; k < n; ++k) next[k] = k + 1, prev[k] = k - 1;  // prev[0] is never read
    const auto joined = [&](size_t k) {  // part k and the one after it, as a token
      const size_t after = next[k];
      return after < n ? rank_of(piece.substr(k, next[after] - k)) : kNoRank;
    };
    struct Pair {
      uint32_t rank;
      size_t left, left_version, right_version;
      bool operator>(const Pair& o) const { return std::tie(rank, left) > std::tie(o.rank, o.left); }
    };
    std::priority_queue<Pair, std::vector<Pair>, std::greater<Pair>> heap;
    const auto push = [&](size_t k) {
      if (next[k] >= n) return;
      if (const uint32_t r = joined(k); r != kNoRank)
        heap.push({r, k, version[k], version[next[k]]});
    };
    for (size_t k = 0; k + 1 < n; ++k) push(k);
    while (!heap.empty()) {
      const Pair p = heap.top();
      heap.pop();
      const size_t right = next[p.left];
      if (!alive[p.left] || right >= n || version[p.left] != p.left_version ||
          version[right] != p.right_version)
        continue;
      // Join: the left part takes the right one's bytes.
      alive[right] = false;
      next[p.left] = next[right];
      if (next[right] < n) prev[next[right]] = p.left;
      ++version[p.left];  // every entry with the left part's old bytes is stale
      push(p.left);
      if (p.left > 0) push(prev[p.left]);  // part 0 never joins its left: it has none
    }
    for (size_t k = 0; k < n; k = next[k])
      out.push_back(uint16_t(rank_of(piece.substr(k, next[k] - k))));
  }

  // Valid UTF-8 text: pattern pieces, each merged.
  void encode_text(std::string_view text, std::vector<uint16_t>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t at = 0;
    while (at < text.size()) {
      const int rc = pcre2_jit_match(re, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match,
                                     nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        fail("GPT-2 tokenizer: pattern match failed at byte {}: {}", at,
             reinterpret_cast<const char*>(msg));
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
      WIT_CHECK(ov[1] > ov[0], "empty GPT-2 piece at byte {}", ov[0]);
      merge(text.substr(ov[0], ov[1] - ov[0]), out);
      at = ov[1];
    }
  }
};

Digest gpt2_vocab_identity() {
  const auto bytes = [](const char* hex) {
    Digest d{};
    for (size_t i = 0; i < d.size(); ++i) d[i] = uint8_t(std::stoi(std::string(hex + 2 * i, 2), nullptr, 16));
    return d;
  };
  const Digest enc = bytes(kGpt2EncoderSha256), merges = bytes(kGpt2MergesSha256);
  return Sha256()
      .update("wit-gpt2-vocab")
      .update(enc.data(), enc.size())
      .update(merges.data(), merges.size())
      .finish();
}

Gpt2Tokenizer::Gpt2Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gpt2Tokenizer::~Gpt2Tokenizer() = default;

fs::path gpt2_vocab_dir(const fs::path& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("WIT_GPT2_VOCAB"); env && *env) return env;
  return WIT_GPT2_VOCAB_DIR;
}

std::unique_ptr<Gpt2Tokenizer> Gpt2Tokenizer::load(const fs::path& dir) {
  if (dir.empty()) fail("no GPT-2 vocabulary directory: {}", kInstallHint);
  const fs::path ranks_file = dir / "gpt2.tiktoken";
  const std::string ranks = read_file(ranks_file);
  const Digest ranks_sha = sha256(ranks.data(), ranks.size());
  if (to_hex(ranks_sha) != kGpt2RanksSha256)
    fail("{} has SHA-256 {}, GPT-2's is {}: not GPT-2's vocabulary; {}", ranks_file.string(),
         to_hex(ranks_sha), kGpt2RanksSha256, kInstallHint);

  // One line per token: its bytes in base64, a space, its id; ids 0 to 50255 once each.
  auto impl = std::make_unique<Impl>();
  impl->bytes_of.resize(kGpt2VocabSize);
  std::vector<bool> seen(kGpt2VocabSize, false);
  std::istringstream lines(ranks);
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    ++n;
    const size_t sp = line.find(' ');
    WIT_CHECK(sp != std::string::npos, "{} line {}: no space", ranks_file.string(), n);
    const int id = std::stoi(line.substr(sp + 1));
    WIT_CHECK(id >= 0 && id < kGpt2Eot && !seen[size_t(id)], "{} line {}: id {}",
              ranks_file.string(), n, id);
    seen[size_t(id)] = true;
    impl->bytes_of[size_t(id)] = base64_decode(line.substr(0, sp));
  }
  WIT_CHECK(n == size_t(kGpt2Eot), "{} has {} tokens, GPT-2 has {}", ranks_file.string(), n,
            kGpt2Eot);
  impl->bytes_of[kGpt2Eot] = "<|endoftext|>";
  for (int id = 0; id < kGpt2VocabSize; ++id)
    if (id != kGpt2Eot) impl->rank.emplace(impl->bytes_of[size_t(id)], uint32_t(id));
  for (int b = 0; b < 256; ++b) {
    const uint32_t r = impl->rank_of(std::string(1, char(b)));
    WIT_CHECK(r != kNoRank, "byte {} has no token", b);
    impl->byte_token[b] = uint16_t(r);
  }
  impl->digest = gpt2_vocab_identity();

  int err = 0;
  PCRE2_SIZE err_at = 0;
  impl->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                           PCRE2_UTF | PCRE2_UCP, &err, &err_at, nullptr);
  WIT_CHECK(impl->re != nullptr, "GPT-2 pattern does not compile (error {} at {})", err, err_at);
  WIT_CHECK(pcre2_jit_compile(impl->re, PCRE2_JIT_COMPLETE) == 0, "PCRE2 JIT unavailable");
  impl->match = pcre2_match_data_create_from_pattern(impl->re, nullptr);
  return std::unique_ptr<Gpt2Tokenizer>(new Gpt2Tokenizer(std::move(impl)));
}

std::vector<uint16_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<uint16_t> out;
  out.reserve(text.size() / 3 + 1);
  // Valid stretches as text; each byte that starts no valid UTF-8 sequence as its own token.
  size_t begin = 0, i = 0;
  while (i < text.size()) {
    const size_t n = utf8_sequence(text, i);
    if (n > 0) {
      i += n;
      continue;
    }
    impl_->encode_text(text.substr(begin, i - begin), out);
    out.push_back(impl_->byte_token[static_cast<unsigned char>(text[i])]);
    begin = ++i;
  }
  impl_->encode_text(text.substr(begin), out);
  return out;
}

std::string Gpt2Tokenizer::decode(const uint16_t* tokens, size_t n) const {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += token_bytes(tokens[i]);
  return out;
}

const std::string& Gpt2Tokenizer::token_bytes(uint16_t id) const {
  if (id >= kGpt2VocabSize)
    fail("GPT-2 tokenizer: token {} is outside the vocabulary (0..{})", id, kGpt2VocabSize - 1);
  return impl_->bytes_of[id];
}

const Digest& Gpt2Tokenizer::vocab_digest() const { return impl_->digest; }

}  // namespace wit::data
