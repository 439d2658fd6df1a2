// The witness log's format ("wit-witness", schema 1): what each table holds and how every hash in
// it is computed. One HDF5 file per run, RUN/witness.h5, written by rank 0; docs/witness-format.md
// is the reference for readers in other languages.
//
// The chain. Step record i covers the previous record's hash (record 0 covers the genesis hash,
// which commits to the run's committed config, dataset, parameter count and signing key), so a
// record fixes everything before it. Every byte of the file is either covered by the genesis or a
// chain, or inert: session facts, wall-clock times and superseded rows are never used to decide
// anything. Every field a record hash covers is a deterministic function of
// the run: the same run at any world size or layout gives the same chain. Wall-clock times live
// in separate, unhashed columns.
//
// Side tables (fingerprints, checkpoints, evals) chain their own rows the same way, and each row
// is anchored to the step record it follows. A signature covers the head: the genesis and the
// last hash and row count of every table.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "record/signing.h"
#include "record/sketch.h"

namespace wit::witness {

constexpr const char* kFormatName = "wit-witness";
constexpr int64_t kSchemaVersion = 2;
constexpr const char* kLogFileName = "witness.h5";

// The hashed fields of one optimizer step (row `step` of /steps).
struct StepFields {
  uint64_t step = 0;    // 0-based index; after it, step + 1 steps are done
  uint64_t tokens = 0;  // tokens consumed by the step
  // Hyperparameters applied.
  float lr = 0, weight_decay = 0, beta1 = 0, beta2 = 0, eps = 0, grad_clip = 0;
  float loss = 0;         // mean over the micro-batches (bits as computed)
  float grad_norm = 0;    // before clipping
  float clip_factor = 1;  // 1: not clipped
  Digest batch_hash{};    // see batch_hash() below
  Digest rng_commitment{};
  Fingerprint weight_fingerprint{};  // sketch of the parameters after the update
};

// Unhashed facts of a step: when it ended and how long it took (seconds).
struct StepTiming {
  double wall_time = 0;  // Unix time
  double seconds = 0;
};

// The behavioural fingerprint: the model's outputs on the fixed probe batch.
struct FingerprintFields {
  uint64_t step = 0;                // steps done when taken
  std::vector<float> mean_logprob;  // per probe sequence, mean log-probability of its targets
  Digest argmax_digest{};           // SHA-256 of the argmax token ids (u16 little-endian)
};

// A checkpoint's file is found by its step (checkpoint_file_name): the log stores no paths.
struct CheckpointFields {
  uint64_t step = 0;    // steps done
  Digest state_hash{};  // trainer/checkpoint.h: over the whole file, header and state
};

struct EvalFields {
  uint64_t step = 0;   // steps done
  std::string split;   // "val"
  std::string metric;  // "loss"
  float value = 0;
};

// Stored width of the split and metric columns; the hash covers all kNameChars bytes as stored
// (the name, then NUL padding), so no byte of the column is unhashed.
constexpr size_t kNameChars = 16;

// Where the checkpoint after `step` steps lives, relative to the run directory.
std::string checkpoint_file_name(uint64_t step);

// Step hashes.
Digest genesis_hash(const std::string& committed_yaml, const Digest& manifest_root,
                    const Digest& data_layout, uint64_t num_params, const PublicKey& key);
Digest record_hash(const Digest& prev, const StepFields& f);
// Micro-batch i's hash is SHA-256 of its tokens (u16 little-endian, row-major b×(T+1));
// the batch hash covers the M of them in order.
Digest micro_batch_hash(const uint16_t* tokens, size_t count);
Digest batch_hash(const std::vector<Digest>& micro_hashes);
// The generators' seeds of the M micro-batches, in order.
Digest rng_commitment(const std::vector<uint64_t>& seeds);
// Commitment to a seed, for /meta (the seeds themselves are in the config).
Digest seed_commitment(const char* name, uint64_t seed);

// Side-table row hashes: `anchor` is the record hash of the last step before the row (the genesis
// hash when no step is done).
Digest fingerprint_hash(const Digest& prev, const Digest& anchor, const FingerprintFields& f);
Digest checkpoint_hash(const Digest& prev, const Digest& anchor, const CheckpointFields& f);
Digest eval_hash(const Digest& prev, const Digest& anchor, const EvalFields& f);
Digest fingerprint_argmax_digest(const std::vector<uint16_t>& argmax);

// The chain heads at one moment: what a signature covers.
struct Heads {
  Digest genesis{};
  uint64_t steps = 0, fingerprints = 0, checkpoints = 0, evals = 0;        // rows
  Digest step_head{}, fingerprint_head{}, checkpoint_head{}, eval_head{};  // last row hash, or genesis
};
Digest head_hash(const Heads& h);
// The bytes an Ed25519 signature signs: "wit-signature-v1" ‖ head.
std::string signed_message(const Digest& head);

struct SignatureRow {
  Heads heads;  // genesis is not stored per row
  Digest head{};
  PublicKey public_key{};
  Signature signature{};
  double wall_time = 0;  // unhashed
};

}  // namespace wit::witness
