// Reading and checking a witness log. Reading never trusts the file: a damaged, truncated or
// tampered log is reported precisely (which table, which row, which field), never crashes.
//
//   WitnessLog log = read_log("runs/tiny/witness.h5");
//   LogReport report = check_log(log);
//   if (!report.ok()) for (auto& p : report.problems) fmt::print("{}\n", p.text());
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "record/run_config.h"
#include "record/format.h"

namespace wit::witness {

// What /meta records about the run (and what LogWriter takes to start one). The genesis covers
// every field but the session facts.
struct RunMeta {
  // The run's committed config (run_config.h committed_yaml): its trajectory and every schedule
  // a reader consults.
  std::string committed_yaml;
  Digest manifest_root{};
  Digest data_layout{};  // data::layout_digest: splits, shards, document places
  uint64_t num_params = 0;
  PublicKey public_key{};  // the key that signs the log
  // One JSON object per training session (start, then each resume): world size, layout,
  // reduction, data directory, versions, hardware, hosts, start time. Not hashed: facts for
  // people, never used to decide anything.
  std::string sessions_json = "[]";
  std::string created;  // ISO 8601 UTC, not hashed
  Digest genesis() const {
    return genesis_hash(committed_yaml, manifest_root, data_layout, num_params, public_key);
  }
};

// Rows as stored: the fields, plus the hashes the file claims for them.
struct StepRow {
  StepFields fields;
  StepTiming timing;
  Digest prev{}, hash{};
};
struct FingerprintRow {
  FingerprintFields fields;
  Digest anchor{}, prev{}, hash{};
};
struct CheckpointRow {
  CheckpointFields fields;
  Digest anchor{}, prev{}, hash{};
};
struct EvalRow {
  EvalFields fields;
  Digest anchor{}, prev{}, hash{};
};

struct Tables {
  std::vector<StepRow> steps;
  std::vector<FingerprintRow> fingerprints;
  std::vector<CheckpointRow> checkpoints;
  std::vector<EvalRow> evals;
  std::vector<SignatureRow> signatures;
};

// One problem found in a log: where it is and what is wrong.
struct Finding {
  std::string table;  // "steps", "checkpoints", "signatures", "meta", …
  int64_t row = -1;   // -1: the table as a whole
  std::string field;  // column or attribute; empty for the row as a whole
  std::string message;
  std::string text() const;  // "steps row 17, field loss: …"
};

struct WitnessLog {
  std::filesystem::path path;
  RunMeta meta;
  Digest genesis{};  // as stored in /meta
  Tables tables;
  // Rows a resume replaced (see docs/witness-format.md), by session: "superseded/1", …
  std::vector<std::pair<std::string, Tables>> superseded;
  // Tables whose columns have different row counts: only the complete rows were read.
  std::vector<Finding> incomplete;
  // Groups, datasets and attributes schema 2 does not define: nothing reads them, so the log
  // must not carry them.
  std::vector<Finding> unknown;
};

// Throws wit::Error (naming the file) when it is not a readable HDF5 file, is not a witness log,
// or has a schema version this build does not know. Everything else is for check_log to judge.
WitnessLog read_log(const std::filesystem::path& file);

struct LogReport {
  std::vector<Finding> problems;   // any: the log must not be trusted past problems.front()
  std::vector<std::string> notes;  // facts worth knowing that are not faults
  // The committed config, when the genesis verifies and it parses (else a problem says why).
  std::optional<RunConfig> config;
  uint64_t valid_steps = 0;     // leading /steps rows whose chain verifies
  uint64_t signed_steps = 0;    // steps covered by the last valid signature
  uint64_t signatures_valid = 0;
  std::optional<Heads> signed_heads;  // what the last valid signature covers
  bool complete = false;              // all train.steps recorded
  bool ok() const { return problems.empty(); }
};

// Verifies the genesis and the committed config, every chain, every anchor and every signature,
// and that the side tables hold exactly the rows the committed schedules give (no unknown,
// duplicate or extra row). With `trusted_key`, every signature must also be that key's.
LogReport check_log(const WitnessLog& log, const std::optional<PublicKey>& trusted_key = {});

// Where the last session's dataset was (empty if the log does not say). A hint, never a fact a
// decision rests on: whatever dataset is found there must have the committed root and layout.
std::filesystem::path dataset_hint(const WitnessLog& log);

// The heads after the first `steps`, `fingerprints`, `checkpoints`, `evals` rows of `t` (as stored).
Heads heads_of(const Digest& genesis, const Tables& t, uint64_t steps, uint64_t fingerprints,
               uint64_t checkpoints, uint64_t evals);

}  // namespace wit::witness
