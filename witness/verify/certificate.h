// Certificates: what `wit verify` signs when it certifies a run, and the checks anyone runs on
// one (signature by a named verifier, and agreement with the run's files). No torch: parsers of
// untrusted certificates are fuzzed alone.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "witness/log/reader.h"
#include "witness/log/signing.h"

namespace wit::witness {

// Certificates: the report as JSON, signed by the verifier.
constexpr const char* kCertificateFormat = "wit-certificate-v2";
nlohmann::json sign_certificate(nlohmann::json certificate, const SigningKey& key);
// The fields of a certificate that name the run and its state, all from its signed log:
// genesis, signed_head, manifest_root, data_layout, trainer_key, final_state_hash (the fields
// check_certificate_against_run compares; model_sha256 is the caller's).
nlohmann::json run_identity(const WitnessLog& log, const Heads& signed_head,
                            const Digest& final_state_hash);
// Checks that `verifier` signed every field; returns "" when valid, else what is wrong. A
// certificate signed by any other key proves nothing to whoever trusts `verifier`.
std::string check_certificate(const nlohmann::json& certificate, const PublicKey& verifier);
// Checks that a certificate describes the run in `run` as it is now: its genesis, signed head,
// dataset, trainer key, final state and published model. "" when it does.
std::string check_certificate_against_run(const nlohmann::json& certificate,
                                          const std::filesystem::path& run);

}  // namespace wit::witness
