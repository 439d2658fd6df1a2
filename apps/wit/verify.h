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
  bool fiat_shamir = false;   // explicit form of the default
  std::string trainer_key;    // public key the trainer must have signed with
  std::filesystem::path key;  // the verifier's signing key (default: the machine's key)
  std::filesystem::path check_certificate;
  int64_t segment = 0;       // 0: checkpoint to checkpoint
  double tolerance = -1;     // < 0: exact replay (the default, the only mode that certifies)
  std::string mode = "ddp";  // the verifier's layout when launched with mpirun
};

// Exit codes: 0 certified (or consistent within tolerance), 1 rejected or an error,
// 3 not reproducible.
constexpr int kExitNotReproducible = 3;

int verify(const VerifyCliOptions& o);

}  // namespace wit::cli
