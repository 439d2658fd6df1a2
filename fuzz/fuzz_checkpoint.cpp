// The checkpoint file's readers (trainer/checkpoint_file.h): in memory, and from a file.
#include "fuzz/fuzz_input.h"
#include "trainer/checkpoint_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  wit::fuzz::refuse_or_accept([&] { (void)wit::parse_checkpoint(bytes, "input"); });
  wit::fuzz::InputFile file(data, size, ".ckpt");
  wit::fuzz::refuse_or_accept([&] { (void)wit::read_checkpoint_info(file.path()); });
  return wit::fuzz::refuse_or_accept([&] { wit::verify_checkpoint(file.path()); });
}
