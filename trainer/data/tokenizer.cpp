// Byte-level tokenizer: the identity on bytes, with one extra end-of-text token.
#include "trainer/data/tokenizer.h"

#include "core/error.h"

namespace wit::data {

std::vector<uint16_t> encode_bytes(std::string_view bytes) {
  std::vector<uint16_t> out(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) out[i] = static_cast<unsigned char>(bytes[i]);
  return out;
}

std::vector<uint16_t> encode_document(std::string_view bytes) {
  std::vector<uint16_t> out;
  out.reserve(bytes.size() + 1);
  out.push_back(kByteEot);
  for (char c : bytes) out.push_back(static_cast<unsigned char>(c));
  return out;
}

std::string decode_bytes(const uint16_t* tokens, size_t n) {
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] == kByteEot) continue;
    if (tokens[i] > kByteEot)
      fail("byte tokenizer: token {} at position {} is outside the vocabulary (0..{})", tokens[i],
           i, kByteEot);
    out.push_back(static_cast<char>(tokens[i]));
  }
  return out;
}

}  // namespace wit::data
