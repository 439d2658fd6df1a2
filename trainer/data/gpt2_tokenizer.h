// GPT-2's byte-level BPE (vocabulary 50,257; <|endoftext|> = 50256), the same ids as tiktoken's
// "gpt2" encoding. Text is split into pieces by GPT-2's pattern (contractions, letters, numbers,
// other, whitespace; Unicode categories via PCRE2), and each piece's bytes are merged pairwise,
// lowest rank first, into tokens whose ids are their ranks.
//
// The vocabulary comes from one file installed with wit, never from the network: gpt2.tiktoken
// (launch/install-deps puts it in deps/gpt2 from the PyPI package openai-whisper), tiktoken's
// rank file for GPT-2: each token's bytes in base64 and its id. It is checked against its
// SHA-256 (tiktoken's own for r50k_base) when loaded. Merging by the rank of the joined bytes is
// GPT-2's merge order, since merge k of GPT-2's vocab.bpe made token 256 + k.
//
// Bytes that are not valid UTF-8 cannot be pattern-matched as text; each such byte is a piece of
// its own (its one-byte token), the valid stretches between them are encoded as above, so every
// byte string encodes and decodes back to itself.
//
//   const Gpt2Tokenizer& t = Gpt2Tokenizer::shared(gpt2_vocab_dir({}));
//   std::vector<uint16_t> ids = t.encode("Hello world");  // {15496, 995}
//   std::string text = t.decode(ids.data(), ids.size());  // "Hello world"
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/sha256.h"

namespace wit::data {

constexpr int kGpt2VocabSize = 50257;
constexpr uint16_t kGpt2Eot = 50256;

// SHA-256 of gpt2.tiktoken, and of GPT-2's released encoder.json and vocab.bpe (the files the
// same vocabulary was first published as; they name it in manifests).
extern const char* const kGpt2RanksSha256;
extern const char* const kGpt2EncoderSha256;
extern const char* const kGpt2MergesSha256;

// H("wit-gpt2-vocab" ‖ sha256(encoder.json) ‖ sha256(vocab.bpe)): the vocabulary's identity as
// manifests record it, whichever file it was loaded from.
Digest gpt2_vocab_identity();

// Where the vocabulary files are: `flag` if given, else $WIT_GPT2_VOCAB, else the directory
// this build was configured with (deps/gpt2 in the source tree).
std::filesystem::path gpt2_vocab_dir(const std::filesystem::path& flag);

class Gpt2Tokenizer {
 public:
  // Reads and checks DIR/gpt2.tiktoken; a missing or altered file throws an Error that says how
  // to install it.
  static std::unique_ptr<Gpt2Tokenizer> load(const std::filesystem::path& dir);
  ~Gpt2Tokenizer();

  // Ordinary text: "<|endoftext|>" in the text is encoded as the characters it is made of.
  std::vector<uint16_t> encode(std::string_view text) const;
  // The bytes of the tokens, 50256 as "<|endoftext|>"; an id >= 50257 throws.
  std::string decode(const uint16_t* tokens, size_t n) const;
  // The bytes of one token.
  const std::string& token_bytes(uint16_t id) const;
  // gpt2_vocab_identity(): what a manifest records.
  const Digest& vocab_digest() const;

  struct Impl;

 private:
  explicit Gpt2Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wit::data
