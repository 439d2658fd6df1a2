// GPT-2's tokenizer (trainer/data/gpt2_tokenizer.h) on any bytes: encoding never fails and
// decodes back to the same bytes, and any ids below the vocabulary decode.
#include <cstdlib>
#include <memory>
#include <string>

#include "trainer/data/gpt2_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<wit::data::Gpt2Tokenizer> t =
      wit::data::Gpt2Tokenizer::load(wit::data::gpt2_vocab_dir({}));
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::vector<uint16_t> ids = t->encode(bytes);
  if (t->decode(ids.data(), ids.size()) != bytes) std::abort();
  std::vector<uint16_t> raw;
  for (size_t i = 0; i + 1 < size; i += 2) raw.push_back(uint16_t((data[i] | data[i + 1] << 8) % 50257));
  (void)t->decode(raw.data(), raw.size());
  return 0;
}
