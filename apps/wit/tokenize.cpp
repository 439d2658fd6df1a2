#include "apps/wit/tokenize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "trainer/data/corpus.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizer.h"

namespace wit::cli {

namespace {

std::string read_input(const std::filesystem::path& input) {
  std::ostringstream s;
  if (input.empty() || input == "-") {
    s << std::cin.rdbuf();
  } else {
    std::ifstream in(input, std::ios::binary);
    if (!in) fail("cannot read {}", input.string());
    s << in.rdbuf();
  }
  return s.str();
}

// The ids in `text`, whitespace-separated; anything else is named with its position.
std::vector<uint16_t> parse_ids(const std::string& text, int vocab) {
  std::vector<uint16_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    long v = 0;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) && v < vocab)
      v = v * 10 + (text[j++] - '0');
    if (j == i || (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))))
      fail("--decode: byte {}: expected a token id, found '{}'", i, text.substr(i, 16));
    if (v >= vocab) fail("--decode: token {} at byte {} is outside the vocabulary (0..{})",
                         text.substr(i, j - i), i, vocab - 1);
    ids.push_back(uint16_t(v));
    i = j;
  }
  return ids;
}

}  // namespace

int tokenize(const TokenizeOptions& o) {
  std::unique_ptr<data::Gpt2Tokenizer> gpt2;
  if (o.tokenizer == "gpt2") gpt2 = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir(o.vocab));
  const auto encode = [&](std::string_view text) {
    return gpt2 ? gpt2->encode(text) : data::encode_bytes(text);
  };
  uint64_t bytes = 0, tokens = 0;
  double seconds = 0;
  const auto timed_encode = [&](std::string_view text) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<uint16_t> ids = encode(text);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bytes += text.size();
    tokens += ids.size();
    return ids;
  };

  if (o.decode) {
    const std::vector<uint16_t> ids = parse_ids(read_input(o.input), gpt2 ? data::kGpt2VocabSize
                                                                           : data::kByteVocabSize);
    const std::string out = gpt2 ? gpt2->decode(ids.data(), ids.size())
                                 : data::decode_bytes(ids.data(), ids.size());
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  if (o.documents) {
    // One JSON line per document: its source, its text (or, when it is not UTF-8, its bytes in
    // hex) and its tokens, without the end-of-text token `wit prepare` puts before each.
    data::read_documents(o.input, data::resolve_format(o.input, o.format), o.text_field,
                         [&](data::Document&& d) {
                           if (d.text.empty()) return;
                           nlohmann::json line = {{"source", d.source}};
                           line["tokens"] = timed_encode(d.text);
                           std::string text;
                           try {
                             line["text"] = d.text;
                             text = line.dump();
                           } catch (const nlohmann::json::type_error&) {  // not UTF-8
                             line.erase("text");
                             line["text_hex"] = to_hex(reinterpret_cast<const uint8_t*>(
                                                           d.text.data()),
                                                       d.text.size());
                             text = line.dump();
                           }
                           fmt::print("{}\n", text);
                         });
  } else {
    const std::vector<uint16_t> ids = timed_encode(read_input(o.input));
    fmt::print("{}\n", fmt::join(ids, " "));
  }
  if (o.stats)
    fmt::print(stderr, "{} tokenizer: {} bytes -> {} tokens in {:.3f} s ({:.2f} MB/s, {:.3f} bytes/token)\n",
               o.tokenizer, bytes, tokens, seconds, seconds > 0 ? double(bytes) / seconds / 1e6 : 0.0,
               tokens ? double(bytes) / double(tokens) : 0.0);
  return 0;
}

}  // namespace wit::cli
