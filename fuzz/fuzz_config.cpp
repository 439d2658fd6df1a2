// The config loader (core/config.h with the run's schema, record/run_config.h) on any text:
// as a config file, and as a committed config read back from a log.
#include "fuzz/fuzz_input.h"
#include "record/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  wit::fuzz::refuse_or_accept([&] {
    (void)wit::run_config_from(wit::config::Config::parse(text, "input", wit::run_schema()));
  });
  return wit::fuzz::refuse_or_accept(
      [&] { (void)wit::run_config_from(wit::parse_committed(text, "input")); });
}
