// `wit verify`: certify a run without trusting whoever trained it. In order, reporting each:
//   1. structure: the log's chains and signatures, its genesis against the config, the dataset
//      (manifest root, layout, shard hashes);
//   2. data audit: every step's batch hash and RNG commitment recomputed from the dataset and
//      the committed schedule (hashing only);
//   3. challenges: c segments (the stretches between consecutive checkpoints, the first from
//      the initialisation) drawn with randomness the trainer could not know when it signed
//      (the verifier's seed, or Fiat–Shamir from the signed head); each is replayed with the
//      trainer's own step function from its starting state (whose hash must match the log), and
//      every recorded field, fingerprint, eval and the closing checkpoint's state hash must be
//      equal, bit for bit;
//   4. final model: model.safetensors is exactly the export of the last checkpoint;
//   5. evaluation: the final val loss recomputed; every held-out document excluded.
// If a fraction f of the steps was not computed as logged, at least a fraction f of segments
// holds such a step, so c challenges reject with probability >= 1 - (1 - f)^c.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "witness/log/signing.h"

namespace wit::witness {

struct VerifyOptions {
  std::filesystem::path run;
  std::filesystem::path data;            // the run's dataset; default: its config's data.dir
  int64_t challenges = 4;                // segments to replay (all of them if the run has fewer)
  std::optional<uint64_t> seed;          // the verifier's randomness; default: Fiat–Shamir
  std::optional<PublicKey> trusted_key;  // the trainer's key, when the verifier knows it
};

struct Stage {
  std::string name;  // structure, data, challenges, model, evaluation
  bool passed = false;
  std::string detail;  // what was checked, or the first mismatch (step and field)
};

struct VerifyReport {
  std::vector<Stage> stages;
  bool certified = false;
  std::vector<uint64_t> challenged;  // distinct segments replayed (their first steps)
  int64_t draws = 0;                 // challenges drawn (with replacement)
  uint64_t segments = 0, steps = 0;
  std::string challenge_source;  // "seed N" or "fiat-shamir from head …"
  nlohmann::json certificate;    // unsigned; see sign_certificate
};

using Progress = std::function<void(const std::string& line)>;

VerifyReport verify_run(const VerifyOptions& o, const Progress& progress);

// The probability that c challenges catch a run with a fraction f of unfaithful steps.
double detection_probability(double f, int64_t c);
// The fewest challenges that catch a fraction f with probability >= p.
int64_t challenges_for(double f, double p);

// Certificates: the report as JSON, signed by the verifier ("wit-certificate-v1").
nlohmann::json sign_certificate(nlohmann::json certificate, const SigningKey& key);
// Checks the signature over every field; returns "" when valid, else what is wrong.
std::string check_certificate(const nlohmann::json& certificate);

}  // namespace wit::witness
