// `wit verify`: certify a run by checking its log and replaying challenged segments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "verify/certificate.h"

namespace wit::cli {

struct VerifyCliOptions {
  std::filesystem::path run;
  std::filesystem::path data;
  std::filesystem::path init_from;  // a run's given initial weights (default: its config.yaml's)
  std::filesystem::path choice_eval;  // a run's multiple-choice file (default: its config.yaml's)
  int64_t challenges = -1;    // -1: from --target and --confidence
  double target = 0.1;        // fraction of unfaithful steps to catch ...
  double confidence = 0.9;    // ... with this probability
  std::string seed;           // the verifier's seed (a non-negative integer); empty: none
  bool fiat_shamir = false;   // challenges from the signed head instead of the verifier's random
  int grinding_bits = 40;     // with --fiat-shamir: tries assumed, 2^bits
  std::string trainer_key;    // public key the trainer must have signed with
  std::filesystem::path key;  // the verifier's signing key (default: the machine's key)
  std::filesystem::path check_certificate;
  std::string verifier_key;  // with --check-certificate: the key that must have signed it
  std::vector<std::string> accept;  // weaker certificates accepted: tolerance, seed, fiat-shamir
  std::string status;  // with --check-certificate: the issuer's status list (file or http URL)
  std::optional<int64_t> segment;  // unset: train.checkpoint_every
  double tolerance = -1;     // < 0: exact replay (the default, the only mode that certifies)
  std::string mode = "ddp";  // the verifier's layout when launched with mpirun
  int64_t checkpoint_leaves = 16;  // leaves hashed of each checkpoint no replay loads
  bool whole_checkpoints = false;  // ... or every byte of every checkpoint
};

// Exit codes: 0 certified, 1 rejected (or an error, or an invalid or withdrawn certificate), 3 not
// reproducible, 4 consistent within tolerance (not a certification) — and, for a valid
// certificate that is weaker than a certification from fresh randomness, 4 unless accepted.
constexpr int kExitNotReproducible = 3;
constexpr int kExitWithinTolerance = 4;

// After a valid certificate's strength: 0 at full strength or when its weakness is one the
// reader accepts (--accept); else says why it is weaker, on stderr, and returns 4.
int weaker_certificate_status(const witness::CertificateStrength& strength,
                              const std::vector<std::string>& accept,
                              const std::filesystem::path& file);

int verify(const VerifyCliOptions& o);

}  // namespace wit::cli
