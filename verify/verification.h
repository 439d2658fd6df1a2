// The internals of `wit verify` (verify/verify.h is its interface): one Verification reads a
// run and the verifier's choices once, then runs the stages in order. Its methods live in three
// files: verify.cpp opens the run and checks its structure and data (hashing only), replay.cpp
// holds the stages that recompute (the challenges' replay, the final model and evaluation), and
// verdict.cpp decides the outcome and writes the certificate.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "record/reader.h"
#include "record/run_config.h"
#include "trainer/compute.h"
#include "trainer/data/choice_set.h"
#include "trainer/data/dataset.h"
#include "trainer/layout.h"
#include "trainer/run_plan.h"
#include "verify/verify.h"

namespace wit::witness::detail {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The 32 bytes every challenge is drawn from (verify.cpp): the verifier's own randomness, a seed,
// or Fiat-Shamir from the signed head; collective.
Digest challenge_key(const VerifyOptions& o, const LogReport& lr, dist::Communicator& comm);

// One verification: the run's files and the verifier's choices, read once, then the stages in
// order, each a method returning what it showed (or throwing the first mismatch), then the verdict
// and, for a certified run, the certificate.
class Verification {
 public:
  Verification(const VerifyOptions& o, dist::Communicator& comm, const Progress& progress)
      : o_(o), comm_(comm), root_(comm.is_root()), progress_line_(progress) {}

  VerifyReport run();

 private:
  bool open_run();
  fs::path dataset_dir() const;
  fs::path given_or_config(const fs::path& given, const char* key) const;
  torch::Tensor initial_weights() const;
  data::ChoiceSet choice_set() const;
  void stage(const char* name, const std::function<std::string()>& body);
  fs::path checkpoint_file(uint64_t step) const;
  void progress(const std::string& line) const {
    if (root_) progress_line_(line);
  }

  // The stages.
  std::string structure();
  std::string data_audit();
  void cut_segments();
  std::string challenges();
  std::string final_model();
  std::string evaluation();

  // What the challenges stage replays and how.
  std::vector<uint64_t> choose_segments();
  uint64_t start_of(uint64_t first) const;
  void price_plan(const std::vector<uint64_t>& order);
  void replay_segment(uint64_t k, bool have_state);
  void load_state(uint64_t step);
  void check_fingerprint(const FingerprintRow& row);
  void check_eval(const EvalRow& row);
  void check_choice_eval(uint64_t step);
  void check_checkpoint(uint64_t step);

  // The verdict and the certificate.
  void excuse_declared_nondeterminism();
  void decide();
  nlohmann::json certificate() const;
  nlohmann::json guarantee() const;
  nlohmann::json checkpoints_statement() const;

  const VerifyOptions& o_;
  dist::Communicator& comm_;
  const bool root_;
  const Progress& progress_line_;
  const Clock::time_point began_ = Clock::now();
  VerifyReport out_;

  // Read by open_run.
  fs::path log_file_;
  std::optional<WitnessLog> log_;
  LogReport lr_;
  std::optional<config::Config> cfg_;
  RunConfig rc_;
  std::optional<Compute> compute_;
  std::unique_ptr<dist::Communicator> device_comm_;
  std::unique_ptr<Layout> layout_;
  fs::path data_dir_;
  std::optional<torch::Tensor> initial_;  // a run's committed initial weights (model.init_sha256)
  std::string nondeterminism_;
  std::map<uint64_t, Digest> states_;  // the committed checkpoints, by steps completed
  std::map<uint64_t, const FingerprintRow*> fingerprints_;
  std::map<uint64_t, const EvalRow*> evals_;  // the val losses, by step
  // A committed multiple-choice evaluation (train.choice_eval_sha256): its file, and its rows by
  // step (acc, acc_norm).
  std::optional<data::ChoiceSet> choices_;
  std::map<uint64_t, std::vector<const EvalRow*>> choice_rows_;
  Digest availability_key_{};

  // Built by the stages.
  std::optional<data::Dataset> dataset_;
  std::optional<RunPlan> plan_;
  uint64_t K_ = 0;  // segment length in steps
  std::vector<std::pair<uint64_t, uint64_t>> segments_;
  std::set<uint64_t> evals_checked_;
  uint64_t planned_ = 0, replayed_ = 0;  // steps of the challenges stage
  Clock::time_point replay_start_, last_line_;
  bool failed_ = false, excused_ = false;
};

}  // namespace wit::witness::detail
