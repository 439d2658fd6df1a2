// The witness log reader and checker (record/reader.h) on any file.
#include "fuzz/fuzz_input.h"
#include "record/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wit::fuzz::InputFile file(data, size, ".h5");
  return wit::fuzz::refuse_or_accept([&] {
    const wit::witness::WitnessLog log = wit::witness::read_log(file.path());
    (void)wit::witness::check_log(log);
  });
}
