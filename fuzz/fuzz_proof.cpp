// The query proof checker (query/query.h) on any JSON. It trusts the root and genesis
// the proof itself names, so the fuzzer reaches every check behind them.
#include "fuzz/fuzz_input.h"
#include "query/query.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto proof = nlohmann::json::parse(data, data + size, nullptr, false);
  if (proof.is_discarded()) return 0;
  return wit::fuzz::refuse_or_accept([&] {
    wit::witness::TrustedRun trusted;
    if (proof.is_object() && proof.contains("run") && proof["run"].is_object()) {
      const auto& run = proof["run"];
      wit::witness::RunMeta meta;
      meta.committed_yaml = run.value("committed_yaml", "");
      meta.manifest_root = wit::digest_from_hex(run.value("manifest_root", ""), "root");
      meta.data_layout = wit::digest_from_hex(run.value("data_layout", ""), "layout");
      meta.num_params = run.value("num_params", uint64_t(0));
      const wit::Digest key = wit::digest_from_hex(run.value("public_key", ""), "key");
      std::copy(key.begin(), key.end(), meta.public_key.begin());
      trusted = {meta.manifest_root, meta.genesis(), std::nullopt};
    }
    (void)wit::witness::check_proof(proof, trusted);
  });
}
