// The certificate checker (verify/certificate.h) on any JSON, against the key it names.
#include "fuzz/fuzz_input.h"
#include "verify/certificate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto cert = nlohmann::json::parse(data, data + size, nullptr, false);
  if (cert.is_discarded()) return 0;
  return wit::fuzz::refuse_or_accept([&] {
    wit::witness::PublicKey key{};
    if (cert.is_object() && cert.contains("verifier_key") && cert["verifier_key"].is_string())
      key = wit::witness::load_public_key(cert["verifier_key"].get<std::string>());
    (void)wit::witness::check_certificate(cert, key);
  });
}
