// Byte-level tokenizer: token = byte value 0..255, plus an end-of-text token 256 (vocab 257).
// Documents are tokenized llm.c-style: each is preceded by the end-of-text token.
//
//   std::vector<uint16_t> t = encode_document("hi");   // {256, 'h', 'i'}
//   std::string s = decode_bytes(t.data(), t.size());  // "hi": EOT decodes to nothing
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wit::data {

constexpr uint16_t kByteEot = 256;
constexpr int kByteVocabSize = 257;

// One token per byte, no EOT.
std::vector<uint16_t> encode_bytes(std::string_view bytes);
// [EOT] + bytes: the token sequence a document contributes to a shard.
std::vector<uint16_t> encode_document(std::string_view bytes);
// Inverse of encode_bytes; EOT tokens produce nothing; a token > 256 throws wit::Error.
std::string decode_bytes(const uint16_t* tokens, size_t n);

}  // namespace wit::data
