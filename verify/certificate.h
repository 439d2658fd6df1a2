// Certificates: what `wit verify` signs when it certifies a run, and the checks anyone runs on
// one (signature by a named verifier, and agreement with the run's files). No torch: parsers of
// untrusted certificates are fuzzed alone.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "record/reader.h"
#include "record/signing.h"

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
// What a valid certificate says, and how strongly. A certification from fresh randomness (the
// verifier's own random source, or the board's, drawn after the run was committed) is the full
// strength; the others are named so that no reader takes them for it:
//   "tolerance"    a closeness result (consistent within tolerance), not exact replay;
//   "seed"         challenges from a seed: the bound holds only if the trainer could not know it;
//   "fiat-shamir"  challenges the trainer could compute and grind (its bound may be 0).
struct CertificateStrength {
  std::string weakness;  // "" at full strength, else one of the names above
  std::string why;       // what the weakness means, for people
  std::string summary;   // the result, the challenge source and the bound at f = 1 % and 10 %
};
// For a certificate check_certificate accepted; throws wit::Error on missing fields.
CertificateStrength certificate_strength(const nlohmann::json& certificate);
// The weaker kinds a reader may accept by name (--accept).
bool is_certificate_weakness(const std::string& name);

// Withdrawal. A certificate's "id" (128 random bits, set when it is signed) names it in its
// issuer's status list: the ids it withdrew, each with "status" (struck: a later check of the run
// failed; revoked: a report it relied on was found wrong) and "reason", signed by the same key.
// A certificate checked offline says nothing about withdrawal after it was fetched.
constexpr const char* kStatusListFormat = "wit-status-v1";
nlohmann::json sign_status_list(nlohmann::json list, const SigningKey& key);
struct CertificateStatus {
  std::string problem;  // "" when the list is valid for this certificate, else why it is not
  std::string issued;   // when the list was issued (UTC, ISO 8601)
  nlohmann::json withdrawn;  // the certificate's entry in the list; null while it stands
};
// Checks `list` (signed by `verifier`, issued no earlier than the certificate) and looks the
// certificate up in it.
CertificateStatus certificate_status(const nlohmann::json& certificate, const nlohmann::json& list,
                                     const PublicKey& verifier);

// Checks that a certificate describes the run in `run` as it is now: its genesis, signed head,
// dataset, trainer key, final state and published model. "" when it does.
std::string check_certificate_against_run(const nlohmann::json& certificate,
                                          const std::filesystem::path& run);

}  // namespace wit::witness
