// The dataset manifest reader (trainer/data/manifest.h) on any file.
#include "fuzz/fuzz_input.h"
#include "trainer/data/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wit::fuzz::InputFile file(data, size, ".h5");
  return wit::fuzz::refuse_or_accept([&] { (void)wit::data::read_manifest(file.path()); });
}
