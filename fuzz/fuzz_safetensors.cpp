// The safetensors header parser (trainer/safetensors_file.h): every tensor's place checked.
#include "fuzz/fuzz_input.h"
#include "trainer/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  return wit::fuzz::refuse_or_accept([&] {
    const auto index = wit::parse_safetensors_header(bytes, bytes.size(), "input");
    for (auto& t : index.tensors)
      if (index.data_offset + t.end > bytes.size()) __builtin_trap();  // a place it promised
  });
}
