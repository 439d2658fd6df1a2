// Hugging Face tokenizer files for a dataset's tokenizer, written beside model.safetensors so that
// transformers' AutoTokenizer.from_pretrained(RUN) encodes text as the run's data was encoded:
// vocab.json and merges.txt (GPT-2's byte-level BPE format), tokenizer_config.json and
// special_tokens_map.json.
//   gpt2: GPT-2's released encoder.json and vocab.bpe, rebuilt from gpt2.tiktoken (each merge is
//         the split the lower-ranked merges make of its token) and checked byte for byte against
//         their published SHA-256 before anything is written.
//   byte: the 256 bytes as tokens 0..255 with no merges, and <|endoftext|> = 256.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "trainer/data/gpt2_tokenizer.h"

namespace wit::data {

struct HfTokenizerFiles {
  std::string vocab_json;  // token (GPT-2's byte-to-character mapping) -> id
  std::string merges_txt;  // "#version: 0.2", then one merge a line, in rank order
};

HfTokenizerFiles gpt2_hf_tokenizer(const Gpt2Tokenizer& tokenizer);
HfTokenizerFiles byte_hf_tokenizer();

// Writes the files into `dir` (each atomically); `context` is the model's maximum length.
void write_hf_tokenizer(const std::filesystem::path& dir, const HfTokenizerFiles& files,
                        int64_t context);

}  // namespace wit::data
