// `wit tokenize`: a text through a tokenizer (ids out), ids back to text, or a corpus's
// documents as `wit prepare` tokenizes them (JSON lines), with throughput on request.
#pragma once

#include <filesystem>
#include <string>

namespace wit::cli {

struct TokenizeOptions {
  std::filesystem::path input;      // a file; empty or "-": standard input
  std::string tokenizer = "byte";   // byte|gpt2, byte as for wit prepare
  std::filesystem::path vocab;      // gpt2: the vocabulary dir
  bool decode = false;              // input: whitespace-separated ids; output: their bytes
  bool documents = false;           // input: a corpus as `wit prepare` reads it
  std::string format = "auto";      // with documents
  std::string text_field = "text";  // with documents, jsonl
  bool stats = false;               // bytes, tokens and MB/s on stderr
};

int tokenize(const TokenizeOptions& o);

}  // namespace wit::cli
