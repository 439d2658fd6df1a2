// The configuration of a training run: the schema of every YAML key `wit train` accepts, and
// the typed structs each component receives. Parsed and validated once, at the edge. No torch:
// the witness log's readers parse the config a run committed to.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config.h"
#include "record/model_config.h"
#include "record/optim_config.h"

namespace wit {

struct DataConfig {
  std::filesystem::path dir;  // a directory made by `wit prepare`
  int64_t seq_len = 128;      // T: a sample is a window of T+1 tokens
  uint64_t seed = 1;          // keys the sample permutation
};

struct TrainConfig {
  int64_t steps = 1000;
  int64_t micro_batches = 1;     // M: fixed by the config, never by the world size
  int64_t micro_batch_size = 8;  // b sequences per micro-batch
  uint64_t seed = 1;             // run seed: initialisation and per-micro-batch RNG
  int64_t threads = 1;           // intra-op threads; part of the run's numerics
  std::string device = "auto";   // auto | cpu | cuda (trainer/compute.h resolves auto)
  std::string precision = "fp32";  // fp32 | bf16
  int64_t log_every = 10;
  int64_t sample_every = 0;  // 0: no text samples while training
  int64_t eval_every = 100;
  int64_t eval_batches = 8;
  int64_t checkpoint_every = 100;
  // Recompute each block's forward in the backward (trainer/layout.h): memory, not bits.
  bool activation_checkpointing = false;
  // A multiple-choice evaluation beside the val loss (trainer/choice_eval.h): a HellaSwag-format
  // file, committed by the SHA-256 of its bytes (the path is only where to find it).
  std::filesystem::path choice_eval;
  std::string choice_eval_sha256;  // hex; empty: no multiple-choice evaluation
};

// One row of an evaluation in the witness log's evals table.
struct EvalRowName {
  std::string split, metric;
};

// Where the initial weights come from: random from train.seed, or given weights the run commits
// to by their hash.
struct InitConfig {
  std::filesystem::path from;  // empty: init_params from the run seed
  std::string sha256;          // hex of the initial parameters' SHA-256 (empty without `from`)
};

// What the witness log records besides the steps (trainer/train_loop.cpp, record/).
struct WitnessConfig {
  int64_t fingerprint_every = 100;
  int64_t probe_sequences = 4;
};

struct RunConfig {
  model::GPTConfig model;
  DataConfig data;
  TrainConfig train;
  optim::AdamWConfig optim;
  InitConfig init;
  std::string dist_mode = "ddp";  // ddp: replicated state; fsdp: sharded state (ZeRO-3)
  // canonical: gradients summed over ranks in one fixed tree; arrival: in the order they reach
  // rank 0 (not reproducible, never certified).
  std::string dist_reduction = "canonical";
  WitnessConfig witness;
  int64_t tokens_per_step() const {
    return train.micro_batches * train.micro_batch_size * data.seq_len;
  }
  // Every step's tokens, saturating at INT64_MAX: the bounds allow up to 2^96, and a product
  // that wrapped could pass a budget.
  int64_t training_tokens() const {
    int64_t out = 0;
    return __builtin_mul_overflow(train.steps, tokens_per_step(), &out) ? INT64_MAX : out;
  }
  // The committed cadence: after which step counts the witness log holds a fingerprint, a val
  // loss and a checkpoint (each also after the last step). The trainer writes these rows and
  // the log's check (record/reader.cpp) accepts no others.
  bool fingerprint_after(int64_t steps_done) const {
    return on_schedule(witness.fingerprint_every, steps_done, train.steps);
  }
  bool eval_after(int64_t steps_done) const {
    return on_schedule(train.eval_every, steps_done, train.steps);
  }
  // The rows each evaluation writes, in order, all after one step: the val loss, then with a
  // committed multiple-choice evaluation its accuracy by total and by per-token log-probability.
  std::vector<EvalRowName> eval_rows() const {
    std::vector<EvalRowName> rows = {{"val", "loss"}};
    if (!train.choice_eval_sha256.empty()) {
      rows.push_back({"choice", "acc"});
      rows.push_back({"choice", "acc_norm"});
    }
    return rows;
  }
  bool checkpoint_after(int64_t steps_done) const {
    return on_schedule(train.checkpoint_every, steps_done, train.steps);
  }
  // After every `every` steps (0: never) and after the last of `total`.
  static bool on_schedule(int64_t every, int64_t steps_done, int64_t total) {
    return steps_done == total || (every > 0 && steps_done % every == 0 && steps_done < total);
  }
};

const config::Schema& run_schema();
// Builds the structs and checks what single keys cannot: relations between keys.
RunConfig run_config_from(const config::Config& c);
// The config as the witness log's genesis commits to it: every key that decides the trajectory
// or that a reader of the log consults (evaluation, checkpoint and fingerprint schedules, eval
// batches), in canonical text. Left out: where the data lives (data.dir: the genesis commits to
// the dataset itself), how the work is spread (dist.mode; dist.reduction while canonical) and
// how often progress is printed (train.log_every).
std::string committed_yaml(const config::Config& c);
// Reads a committed config back (`origin` names it in errors): it must parse against the schema
// and be in the canonical form committed_yaml() writes, so that one config has one text.
config::Config parse_committed(const std::string& yaml, const std::string& origin);
// Keys that may change on --resume: they are not committed.
const std::vector<std::string>& resume_mutable_keys();

}  // namespace wit
