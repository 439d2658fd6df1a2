// Byte tokenizer: exact round trips, the leading EOT of documents, and vocabulary checks.
#include "trainer/data/tokenizer.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/data/temp_dir.h"

namespace wit::data {
namespace {

using wit::testing::error_of;

TEST(Tokenizer, every_byte_round_trips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::vector<uint16_t> tokens = encode_bytes(all);
  ASSERT_EQ(tokens.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(tokens[b], b);
  EXPECT_EQ(decode_bytes(tokens.data(), tokens.size()), all);
}

TEST(Tokenizer, document_is_preceded_by_eot) {
  std::vector<uint16_t> tokens = encode_document("hi\n");
  EXPECT_EQ(tokens, (std::vector<uint16_t>{kByteEot, 'h', 'i', '\n'}));
  EXPECT_EQ(encode_document(""), std::vector<uint16_t>{kByteEot});
  EXPECT_EQ(kByteVocabSize, 257);
}

TEST(Tokenizer, eot_decodes_to_nothing) {
  std::vector<uint16_t> tokens = {kByteEot, 'a', kByteEot, kByteEot, 'b'};
  EXPECT_EQ(decode_bytes(tokens.data(), tokens.size()), "ab");
}

TEST(Tokenizer, token_outside_vocabulary_is_rejected) {
  std::vector<uint16_t> tokens = {'a', 'b', 257};
  std::string msg = error_of([&] { decode_bytes(tokens.data(), tokens.size()); });
  EXPECT_NE(msg.find("token 257 at position 2"), std::string::npos) << msg;
}

TEST(Tokenizer, utf8_text_round_trips_bytewise) {
  std::string text = "na\xc3\xafve \xe2\x9c\x93\n";
  std::vector<uint16_t> tokens = encode_document(text);
  EXPECT_EQ(tokens.size(), text.size() + 1);
  EXPECT_EQ(decode_bytes(tokens.data(), tokens.size()), text);
}

}  // namespace
}  // namespace wit::data
