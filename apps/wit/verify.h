// `wit verify`: certify a run by checking its log and replaying challenged segments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace wit::cli {

struct VerifyCliOptions {
  std::filesystem::path run;
  std::filesystem::path data;
  int64_t challenges = -1;    // -1: from --target and --confidence
  double target = 0.1;        // fraction of unfaithful steps to catch ...
  double confidence = 0.9;    // ... with this probability
  int64_t seed = -1;          // -1: Fiat–Shamir from the signed head
  std::string trainer_key;    // public key the trainer must have signed with
  std::filesystem::path key;  // the verifier's signing key (default: the machine's key)
  std::filesystem::path check_certificate;
};

int verify(const VerifyCliOptions& o);

}  // namespace wit::cli
