// `wit verify`: certify a run without trusting whoever trained it. In order, reporting each:
//   1. structure: the log's chains, signatures and schedules, its committed config, the dataset
//      (manifest root, layout, shard hashes), every checkpoint file whole and bound to its row;
//   2. data audit: every step's batch hash and RNG commitment recomputed from the dataset and
//      the committed schedule (hashing only);
//   3. challenges: the run is cut into aligned segments that start and end at checkpoints; the
//      first and the last are always replayed, and c more are drawn uniformly from the others
//      with randomness the trainer cannot steer (the verifier's own, by default); each is
//      replayed with the trainer's own step function from its committed starting state, and
//      every recorded field, fingerprint, eval and the closing checkpoint's state hash must be
//      equal, bit for bit;
//   4. final model: model.safetensors is exactly the export of the last checkpoint;
//   5. evaluation: the final val loss recomputed; every held-out document excluded.
// A run whose config declares a setting that does not fix its bits (dist.reduction = arrival)
// is reported "not reproducible": neither certified nor, when only its numbers differ, fraud.
// If a fraction f of the steps was not computed as logged, either one is in the first or last
// segment (caught for certain) or at least a fraction f of the middle segments holds one, so c
// draws reject with probability >= 1 - (1 - f)^c. docs/verify.md states the threat model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "trainer/dist/communicator.h"
#include "verify/certificate.h"
#include "verify/challenges.h"
#include "record/format.h"
#include "record/signing.h"

namespace wit::witness {

struct VerifyOptions {
  std::filesystem::path run;
  std::filesystem::path data;  // the run's dataset; default: its config's data.dir
  // A run that started from given weights (model.init_sha256): where they are; default: the
  // run's config.yaml's model.init_from (unsigned, a hint: the hash decides).
  std::filesystem::path init_from;
  // A run that scores a multiple-choice evaluation (train.choice_eval_sha256): its file;
  // default: the run's config.yaml's train.choice_eval (a hint: the hash decides).
  std::filesystem::path choice_eval;
  int64_t challenges = 4;      // segments drawn besides the first and the last
  // Segment length in steps, a multiple of train.checkpoint_every; 0: train.checkpoint_every.
  int64_t segment = 0;
  ChallengeSource source = ChallengeSource::VerifierRandom;
  uint64_t seed = 0;       // with VerifierSeed
  int grinding_bits = 40;  // with FiatShamir: the trainer is assumed to try up to 2^bits logs
  std::optional<PublicKey> trusted_key;  // the trainer's key, when the verifier knows it
  // Replay on other hardware: numeric fields compared within this relative distance, weights
  // at checkpoints by relative L2 distance. Never certifies.
  std::optional<double> tolerance;
  std::string mode = "ddp";  // the verifier's layout at N processes: ddp or fsdp
  // A leaderboard's worker replays the segments it is assigned (indices of the K-step
  // segments) instead of the first, the last and c draws, and `final_checks = false` leaves out
  // the model and evaluation stages. No certificate is made then: the board makes its own.
  std::optional<std::vector<uint64_t>> segments;
  bool final_checks = true;
  // A board's job also asks for evidence that only a replay has: the state hash after this
  // step, strictly inside an assigned segment (no file or log holds that state).
  std::optional<uint64_t> probe_after_step;
  // Checkpoints no replay loads: each has its leaf table checked against the committed state
  // hash and this many of its leaves hashed (drawn from the challenge source), or, with
  // whole_checkpoints, every byte read and hashed. Loaded checkpoints are always hashed whole.
  int64_t checkpoint_leaves = 16;
  bool whole_checkpoints = false;
};

// Where the verdict can land. Only exact replay of a reproducible run certifies.
enum class Outcome {
  Certified,                  // every check passed, every replayed bit equal
  ConsistentWithinTolerance,  // tolerance mode: every check passed within the thresholds
  NotReproducible,            // the run declares a setting whose bits a replay cannot repeat
  Rejected,                   // a check failed: the log does not describe what was computed
};
const char* outcome_name(Outcome o);  // "certified", "consistent within tolerance", …

struct Stage {
  std::string name;  // structure, data, challenges, model, evaluation
  bool passed = false;
  std::string detail;           // what was checked, or the first mismatch (step and field)
  bool outputs_differ = false;  // failed on a computed result (loss, weights, evals), not an input
};

// What verification cost, for comparing with what training cost (the log's step times).
struct VerifyCost {
  uint64_t replayed_steps = 0;
  double replay_seconds = 0;  // the verifier's time in the step function
  double logged_seconds = 0;  // the trainer's time for the same steps, from the log (unhashed)
  int64_t loads = 0;          // checkpoints loaded to start a segment
  double load_seconds = 0;
  double audit_seconds = 0;  // the data stage
  double total_seconds = 0;
  uint64_t checkpoint_bytes_checked = 0;  // read by the structure stage's availability checks
};

// What the structure stage showed of the checkpoints that no replay loads.
struct Availability {
  int64_t checkpoints = 0;        // committed checkpoints, each present at its committed size
  int64_t leaves_per_checkpoint = 0;  // sampled leaves (all of them for small checkpoints)
  int64_t leaves_of_checkpoint = 0;   // in each checkpoint's table
  bool whole = false;             // every byte of every checkpoint read and hashed
};

// Largest distances observed in tolerance mode (relative, except probe log-probabilities,
// which are absolute).
struct Distances {
  double loss = 0, grad_norm = 0, probe_logprob = 0, eval = 0, weights = 0;
  double moments = 0;  // AdamW's m and v at closing checkpoints
};

struct VerifyReport {
  std::vector<Stage> stages;
  Outcome outcome = Outcome::Rejected;
  bool certified = false;
  std::string reason;                // why the outcome is not "certified"
  std::vector<uint64_t> challenged;       // distinct segments replayed (their first steps)
  std::vector<uint64_t> always_replayed;  // the first and the last segment
  std::vector<uint64_t> drawn;            // each draw's segment, in draw order
  int64_t draws = 0;                      // challenges drawn (with replacement)
  uint64_t segments = 0, steps = 0;
  std::string challenge_source;  // where the draws' randomness came from, for people
  Digest model_sha256{};         // of the published model.safetensors
  // Tokens of either split in a record that begins mid-document (an llm.c split's first): no
  // text query finds them.
  uint64_t tokens_in_no_document = 0;
  // How the dataset's records name documents (its manifest's tokenizer: byte, gpt2 or external),
  // once the structure stage checked every record so; empty before.
  std::string dataset_tokenizer;
  std::optional<Digest> probe_state;  // with probe_after_step, once the replay reached it
  int world = 1;                 // processes that replayed
  VerifyCost cost;
  Availability availability;
  Distances distances;
  nlohmann::json certificate;  // unsigned; see sign_certificate (empty unless certified or
                               // consistent within tolerance)
};

using Progress = std::function<void(const std::string& line)>;

// Collective over `comm` (any world size that divides the run's micro-batches, whatever the
// trainer used); progress lines come from rank 0, and every rank returns the same report.
VerifyReport verify_run(const VerifyOptions& o, dist::Communicator& comm, const Progress& progress);

}  // namespace wit::witness
