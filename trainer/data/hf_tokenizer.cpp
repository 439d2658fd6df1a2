#include "trainer/data/hf_tokenizer.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"

namespace wit::data {

namespace {

constexpr int kGpt2Vocab = 50257;
constexpr const char* kEot = "<|endoftext|>";

// GPT-2's byte-to-character mapping: the printable bytes (! to ~, ¡ to ¬, ® to ÿ) stand for
// themselves, the others for the code points from 256 on, in byte order.
const std::array<char32_t, 256>& byte_chars() {
  static const std::array<char32_t, 256> chars = [] {
    std::array<char32_t, 256> c{};
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) c[size_t(b)] = printable(b) ? char32_t(b) : next++;
    return c;
  }();
  return chars;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// A token's bytes as GPT-2's files write them: UTF-8, and a JSON string as Python's json.dumps
// writes it (ASCII only: anything outside space..~ as \uXXXX).
std::string token_text(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) append_utf8(out, byte_chars()[b]);
  return out;
}
std::string json_key(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char b : bytes) {
    const char32_t cp = byte_chars()[b];
    if (cp == '"' || cp == '\\')
      out += fmt::format("\\{}", char(cp));
    else if (cp >= 0x20 && cp <= 0x7E)
      out += char(cp);
    else
      out += fmt::format("\\u{:04x}", uint32_t(cp));
  }
  return out + "\"";
}

std::string vocab_json(const std::vector<std::string>& tokens) {
  std::string out = "{";
  for (size_t id = 0; id < tokens.size(); ++id)
    out += fmt::format("{}{}: {}", id ? ", " : "", json_key(tokens[id]), id);
  return out + fmt::format(", \"{}\": {}}}", kEot, tokens.size());
}

}  // namespace

HfTokenizerFiles gpt2_hf_tokenizer(const Gpt2Tokenizer& tokenizer) {
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int> rank;
  for (int id = 0; id < kGpt2Vocab - 1; ++id) {
    tokens.push_back(tokenizer.token_bytes(uint16_t(id)));
    rank.emplace(tokens.back(), id);
  }
  HfTokenizerFiles f;
  f.vocab_json = vocab_json(tokens);
  f.merges_txt = "#version: 0.2\n";
  // Token r (from 256 on) was made by merging the two parts that the merges ranked below it
  // leave of its bytes.
  for (int r = 256; r < kGpt2Vocab - 1; ++r) {
    const std::string& t = tokens[size_t(r)];
    std::vector<std::string> parts;
    for (char c : t) parts.emplace_back(1, c);
    for (;;) {
      int best = r;
      size_t at = 0;
      for (size_t i = 0; i + 1 < parts.size(); ++i)
        if (auto it = rank.find(parts[i] + parts[i + 1]); it != rank.end() && it->second < best)
          best = it->second, at = i;
      if (best == r) break;
      parts[at] += parts[at + 1];
      parts.erase(parts.begin() + std::ptrdiff_t(at) + 1);
    }
    if (parts.size() != 2)
      fail("gpt2.tiktoken: token {} is not one merge of two lower-ranked tokens", r);
    f.merges_txt += token_text(parts[0]) + " " + token_text(parts[1]) + "\n";
  }
  // The released files exactly, or nothing.
  if (to_hex(sha256(f.vocab_json)) != kGpt2EncoderSha256 ||
      to_hex(sha256(f.merges_txt)) != kGpt2MergesSha256)
    fail("the GPT-2 vocabulary rebuilt from gpt2.tiktoken is not GPT-2's released "
         "encoder.json and vocab.bpe (SHA-256 differs)");
  return f;
}

HfTokenizerFiles byte_hf_tokenizer() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, char(b));
  return {vocab_json(tokens), "#version: 0.2\n"};
}

void write_hf_tokenizer(const std::filesystem::path& dir, const HfTokenizerFiles& files,
                        int64_t context) {
  const nlohmann::ordered_json special = {
      {"bos_token", kEot}, {"eos_token", kEot}, {"unk_token", kEot}};
  nlohmann::ordered_json config = special;
  config["add_prefix_space"] = false;
  config["clean_up_tokenization_spaces"] = false;  // decode gives back the text, spaces as they were
  config["model_max_length"] = context;
  config["tokenizer_class"] = "GPT2Tokenizer";
  write_file_atomic(dir / "vocab.json", files.vocab_json);
  write_file_atomic(dir / "merges.txt", files.merges_txt);
  write_file_atomic(dir / "special_tokens_map.json", special.dump(2) + "\n");
  write_file_atomic(dir / "tokenizer_config.json", config.dump(2) + "\n");
}

}  // namespace wit::data
