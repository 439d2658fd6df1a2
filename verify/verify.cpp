#include "verify/verify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "core/clock.h"
#include "core/error.h"
#include "core/fs.h"
#include "trainer/batch.h"
#include "trainer/checkpoint.h"
#include "trainer/choice_eval.h"
#include "trainer/compute.h"
#include "trainer/device_comm.h"
#include "trainer/data/dataset.h"
#include "trainer/data/split.h"
#include "trainer/layout.h"
#include "trainer/run_plan.h"
#include "record/run_config.h"
#include "trainer/runtime.h"
#include "trainer/safetensors.h"
#include "trainer/step.h"
#include "trainer/witnessing.h"
#include "record/reader.h"
#include "query/query.h"
#include "verify/compare.h"

namespace wit::witness {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Settings under which the same inputs need not give the same bits.
std::string declared_nondeterminism(const config::Config& cfg) {
  if (cfg.get_string("dist.reduction") == "arrival")
    return "dist.reduction = arrival: the trainer summed gradients over ranks in the order "
           "their messages arrived, which no replay can repeat";
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The 32 bytes every challenge is drawn from. The verifier's own randomness (the default) is
// drawn on rank 0 from the operating system after the run was received, and shared.
Digest challenge_key(const VerifyOptions& o, const LogReport& lr, dist::Communicator& comm) {
  Digest key{};
  switch (o.source) {
    case ChallengeSource::VerifierRandom:
      if (comm.is_root()) {
        size_t got = 0;
        while (got < key.size()) {
          const ssize_t r = ::getrandom(key.data() + got, key.size() - got, 0);
          if (r < 0 && errno != EINTR) fail("cannot read the OS random source: {}", std::strerror(errno));
          if (r > 0) got += size_t(r);
        }
      }
      comm.broadcast(key.data(), key.size(), 0);
      return key;
    case ChallengeSource::VerifierSeed:
      return Sha256().update("wit-challenge-seed-v1").update_u64(o.seed).finish();
    case ChallengeSource::FiatShamir:
      return fiat_shamir_key(*lr.signed_heads);
  }
  fail("internal: unknown challenge source");
}

// `count` distinct leaves of the checkpoint after `step` (all of them when count >= leaves),
// uniform, from the availability key.
std::vector<uint64_t> sample_leaves(const Digest& key, uint64_t step, uint64_t leaves,
                                    uint64_t count) {
  std::vector<uint64_t> out;
  if (count >= leaves) {
    for (uint64_t i = 0; i < leaves; ++i) out.push_back(i);
    return out;
  }
  const Digest k = Sha256().update(key.data(), 32).update_u64(step).finish();
  std::set<uint64_t> seen;
  for (uint64_t j = 0; seen.size() < count; ++j) {
    const uint64_t leaf = draw_below(k, j, leaves);
    if (seen.insert(leaf).second) out.push_back(leaf);
  }
  return out;
}

std::string challenge_source_text(const VerifyOptions& o, const LogReport& lr) {
  switch (o.source) {
    case ChallengeSource::VerifierRandom:
      return "the verifier's random source (getrandom), drawn after the run was received";
    case ChallengeSource::VerifierSeed:
      return fmt::format("the verifier's seed {}", o.seed);
    case ChallengeSource::FiatShamir:
      return "Fiat-Shamir from the signed head " + to_hex(head_hash(*lr.signed_heads)).substr(0, 16);
  }
  return "?";
}


}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Certified:
      return "certified";
    case Outcome::ConsistentWithinTolerance:
      return "consistent within tolerance";
    case Outcome::NotReproducible:
      return "not reproducible";
    case Outcome::Rejected:
      return "rejected";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

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

VerifyReport Verification::run() {
  if (!open_run()) return out_;
  stage("structure", [&] { return structure(); });
  stage("data", [&] { return data_audit(); });
  cut_segments();
  set_compute_threads(int(rc_.train.threads));
  stage("challenges", [&] { return challenges(); });
  excuse_declared_nondeterminism();
  if (o_.final_checks) {
    stage("model", [&] { return final_model(); });
    stage("evaluation", [&] { return evaluation(); });
  }
  out_.cost.total_seconds = seconds_since(began_);
  // Distances are seen on rank 0: every rank reports them.
  comm_.broadcast(&out_.distances, sizeof out_.distances, 0);
  decide();
  if (o_.segments || !o_.final_checks ||
      (out_.outcome != Outcome::Certified && out_.outcome != Outcome::ConsistentWithinTolerance))
    return out_;
  out_.certificate = certificate();
  return out_;
}

// The log, its check and the committed config; where and how to replay. False when the log has
// no committed config: there is nothing to replay, and the structure stage says why.
bool Verification::open_run() {
  out_.world = comm_.size();
  log_file_ = o_.run / kLogFileName;
  if (!fs::exists(log_file_))
    fail("{} has no {}: not a run directory of a witnessed run", o_.run.string(), kLogFileName);
  if (o_.tolerance && !(*o_.tolerance >= 0 && std::isfinite(*o_.tolerance)))
    fail("--tolerance must be a finite relative distance >= 0, got {}", *o_.tolerance);
  log_.emplace(read_log(log_file_));
  lr_ = check_log(*log_, o_.trusted_key);
  // Every fact the verifier uses comes from the committed config; nothing else in /meta is read.
  if (!lr_.config) {
    // Without a committed config there is nothing to replay: the log itself is the lie.
    out_.stages.push_back({"structure", false, lr_.problems.front().text()});
    out_.reason = "structure: " + lr_.problems.front().text();
    progress(fmt::format("{:<11} FAILED: {}", "structure", lr_.problems.front().text()));
    return false;
  }
  cfg_.emplace(parse_committed(log_->meta.committed_yaml, log_file_.string() + ":/meta"));
  rc_ = *lr_.config;
  // Where to replay: a GPU run exactly only on the same GPU and libraries (said up front).
  std::string compute_note;
  compute_.emplace(replay_compute(log_->meta.sessions_json, rc_, o_.tolerance.has_value(),
                                  comm_.size(), &compute_note));
  if (!compute_note.empty()) progress("note: " + compute_note);
  model::GPTConfig replay_model = rc_.model;
  replay_model.attention = compute_->attention;
  // Gradients on GPUs travel as in training (NCCL, or staged through the host).
  device_comm_ = device_communicator(comm_, *compute_, /*quiet=*/!root_);
  // The verifier's layout, with the trainer's rules and messages (world size, M).
  layout_ = make_layout(o_.mode, replay_model, rc_.train.micro_batches,
                        device_comm_ ? *device_comm_ : comm_, *compute_);
  data_dir_ = dataset_dir();
  if (!rc_.init.sha256.empty()) initial_ = initial_weights();
  nondeterminism_ = declared_nondeterminism(*cfg_);
  out_.steps = lr_.valid_steps;
  const Tables& t = log_->tables;
  for (auto& c : t.checkpoints) states_[c.fields.step] = c.fields.state_hash;
  for (auto& p : t.fingerprints) fingerprints_[p.fields.step] = &p;
  for (auto& e : t.evals) {
    if (e.fields.split == "val" && e.fields.metric == "loss") evals_[e.fields.step] = &e;
    if (e.fields.split == "choice") choice_rows_[e.fields.step].push_back(&e);
  }
  if (!rc_.train.choice_eval_sha256.empty()) choices_ = choice_set();
  // The availability draws' randomness: the challenges' source, under its own label. Drawn here,
  // by every rank (a fresh draw is broadcast), before any stage can fail on one rank alone.
  if (!(o_.source == ChallengeSource::FiatShamir && !lr_.signed_heads))  // else structure fails
    availability_key_ = Sha256()
                            .update("wit-availability-v1")
                            .update(challenge_key(o_, lr_, comm_).data(), 32)
                            .finish();
  return true;
}

// --data, or where the log's unsigned session facts say the dataset was.
fs::path Verification::dataset_dir() const {
  const fs::path dir = o_.data.empty() ? dataset_hint(*log_) : o_.data;
  if (dir.empty())
    fail("{} does not say where its dataset was: give it with --data", log_file_.string());
  if (!o_.data.empty()) return dir;
  // The hint is unsigned: a dataset it points to that is missing or not the committed one is
  // the verifier's problem to solve (--data), never evidence against the trainer.
  const fs::path manifest = dir / data::kManifestFile;
  std::string why;
  if (!fs::exists(manifest)) {
    why = "has no " + std::string(data::kManifestFile);
  } else {
    const data::Manifest m = data::read_manifest(manifest);
    if (m.root != log_->meta.manifest_root || data::layout_digest(m) != log_->meta.data_layout)
      why = "is not the dataset the run committed to";
  }
  if (!why.empty())
    fail("{} (where the log's unsigned session facts say the dataset was) {}: give the run's "
         "dataset with --data",
         dir.string(), why);
  return dir;
}

// The weights a run committed to start from (model.init_sha256), from --init-from or the run's
// config.yaml. Weights that are missing or hash otherwise are the verifier's problem to solve,
// never evidence against the trainer: an error, not a verdict.
torch::Tensor Verification::initial_weights() const {
  fs::path from = o_.init_from;
  if (from.empty() && fs::exists(o_.run / "config.yaml"))
    from = config::Config::load(o_.run / "config.yaml", run_schema(), {}).get_string("model.init_from");
  if (from.empty())
    fail("{} starts from given weights (SHA-256 {}): give them with --init-from", o_.run.string(),
         rc_.init.sha256.substr(0, 16));
  torch::Tensor w;
  try {
    w = import_gpt2_safetensors(from, rc_.model);
  } catch (const Error& e) {
    fail("{} starts from given weights (SHA-256 {}): {}; give them with --init-from",
         o_.run.string(), rc_.init.sha256.substr(0, 16), e.what());
  }
  if (to_hex(params_sha256(w)) != rc_.init.sha256)
    fail("{} is not the weights {} started from (SHA-256 {}, the run committed {}): give them with "
         "--init-from",
         from.string(), o_.run.string(), to_hex(params_sha256(w)).substr(0, 16),
         rc_.init.sha256.substr(0, 16));
  return w;
}

// The multiple-choice file a run committed to (train.choice_eval_sha256), from --choice-eval or the
// run's config.yaml, tokenized as the dataset's manifest says. Like the initial weights: a file
// that is missing or hashes otherwise is the verifier's problem, an error and not a verdict.
data::ChoiceSet Verification::choice_set() const {
  const std::string& committed = rc_.train.choice_eval_sha256;
  fs::path file = o_.choice_eval;
  if (file.empty() && fs::exists(o_.run / "config.yaml"))
    file = config::Config::load(o_.run / "config.yaml", run_schema(), {})
               .get_string("train.choice_eval");
  if (file.empty())
    fail("{} scores a multiple-choice evaluation (SHA-256 {}): give its file with --choice-eval",
         o_.run.string(), committed.substr(0, 16));
  data::ChoiceSet set;
  try {
    set = data::load_choice_set(file, data::read_manifest(data_dir_ / data::kManifestFile),
                                rc_.model.context, committed);
  } catch (const Error& e) {
    fail("{} scores a multiple-choice evaluation (SHA-256 {}): {}; give its file with "
         "--choice-eval",
         o_.run.string(), committed.substr(0, 16), e.what());
  }
  return set;
}

// Runs one stage unless an earlier one failed; every rank leaves it with the same verdict.
void Verification::stage(const char* name, const std::function<std::string()>& body) {
  Stage s{name, false, ""};
  if (failed_) {
    s.detail = "not run: an earlier stage failed";
    out_.stages.push_back(s);
    return;
  }
  const auto start = Clock::now();
  try {
    s.detail = body();
    s.passed = true;
  } catch (const Mismatch& m) {
    s.detail = m.what;
    s.outputs_differ = m.outputs;
  } catch (const Error& e) {
    s.detail = e.what();
  }
  std::vector<uint8_t> passed(size_t(comm_.size()));
  const uint8_t mine = s.passed;
  comm_.all_gather_bytes(&mine, 1, passed.data());
  for (int r = 0; r < comm_.size() && s.passed; ++r)
    if (!passed[size_t(r)]) {
      s.passed = false;
      s.detail = fmt::format("failed on rank {} of {}", r, comm_.size());
    }
  failed_ = !s.passed;
  progress(fmt::format("{:<11} {} ({:.1f}s): {}", name, s.passed ? "passed" : "FAILED",
                       seconds_since(start), s.detail));
  out_.stages.push_back(s);
}

// The committed checkpoint after `step`, bound to its row: its header's step, run (genesis) and
// size, and its content hash (the state hash covers every byte).
fs::path Verification::checkpoint_file(uint64_t step) const {
  const fs::path file = o_.run / checkpoint_file_name(step);
  if (!fs::exists(file))
    mismatch(fmt::format("checkpoint {} (after step {}) is missing", file.string(), step));
  CheckpointInfo info;
  try {
    info = read_checkpoint_info(file);
  } catch (const Error& e) {
    mismatch(e.what());
  }
  if (info.step != int64_t(step))
    mismatch(fmt::format("checkpoint {} holds the state after step {}, the log says {}",
                         file.string(), info.step, step));
  if (info.genesis != log_->genesis)
    mismatch(fmt::format("checkpoint {} belongs to another run (genesis {}, the log's is {})",
                         file.string(), to_hex(info.genesis).substr(0, 16),
                         to_hex(log_->genesis).substr(0, 16)));
  if (uint64_t(info.num_params) != log_->meta.num_params)
    mismatch(fmt::format("checkpoint {} holds {} parameters, the run's model {}", file.string(),
                         info.num_params, log_->meta.num_params));
  if (info.state_hash != states_.at(step))
    mismatch(fmt::format("checkpoint {} has state hash {}, the log committed {}", file.string(),
                         to_hex(info.state_hash).substr(0, 16),
                         to_hex(states_.at(step)).substr(0, 16)));
  return file;
}

// The log's chains, signatures and schedules, the dataset, and every committed checkpoint.
std::string Verification::structure() {
  if (!lr_.ok()) mismatch(lr_.problems.front().text());
  if (!lr_.complete)
    mismatch(fmt::format("the run is not complete: {} of {} steps recorded", lr_.valid_steps,
                         rc_.train.steps));
  dataset_.emplace(data::Dataset::open(data_dir_));
  if (dataset_->manifest().root != log_->meta.manifest_root)
    mismatch(fmt::format("dataset {} has root {}, the run committed to {}", data_dir_.string(),
                         to_hex(dataset_->manifest().root), to_hex(log_->meta.manifest_root)));
  if (data::layout_digest(dataset_->manifest()) != log_->meta.data_layout)
    mismatch(fmt::format("dataset {} lays its documents out differently from the run's",
                         data_dir_.string()));
  dataset_->verify_shard_hashes();
  // Every checkpoint present at its committed size with a leaf table that hashes to its
  // committed state hash, and a few of its leaves (drawn after the run was received) hashed:
  // checkpoints are what later challenges start from, so a run must keep them all; reading
  // each whole would cost as much as the run's state times its checkpoints, whatever is
  // challenged. Checkpoints a replay loads are hashed whole when loaded. The ranks share this.
  size_t i = 0;
  uint64_t bytes = 0;
  const uint64_t L = checkpoint_leaf_count(int64_t(log_->meta.num_params));
  const uint64_t per = std::min(L, uint64_t(std::max<int64_t>(o_.checkpoint_leaves, 0)));
  for (auto& [step, hash] : states_) {
    const fs::path file = checkpoint_file(step);
    if (i++ % size_t(comm_.size()) != size_t(comm_.rank())) continue;
    try {
      if (o_.whole_checkpoints) {
        verify_checkpoint(file);
        bytes += fs::file_size(file);
        continue;
      }
      bytes += verify_checkpoint_leaves(file, sample_leaves(availability_key_, step, L, per));
    } catch (const Error& e) {
      mismatch(e.what());
    }
  }
  out_.cost.checkpoint_bytes_checked = bytes;
  out_.availability = {int64_t(states_.size()), int64_t(per), int64_t(L), o_.whole_checkpoints};
  const std::string how =
      o_.whole_checkpoints
          ? std::string("read and hashed whole")
          : fmt::format("present, their leaf tables matching the committed state hashes, {} "
                        "leaves of each hashed",
                        per);
  return fmt::format(
      "{} steps chained, {} signatures valid (key {}), {} checkpoints {}, dataset {} and its {} "
      "shards match",
      lr_.valid_steps, lr_.signatures_valid, key_id(log_->meta.public_key), states_.size(), how,
      to_hex(log_->meta.manifest_root).substr(0, 16), dataset_->manifest().shards.size());
}

// Every step's inputs recomputed from the committed schedule and config (hashing only).
std::string Verification::data_audit() {
  const auto start = Clock::now();
  plan_.emplace(rc_, *dataset_);
  for (auto& row : log_->tables.steps) {
    const StepFields& f = row.fields;
    // Only the inputs are compared here; the outputs are the replay's to check.
    compare_inputs(step_fields(committed_inputs(plan_->context(), int64_t(f.step))), f);
  }
  out_.cost.audit_seconds = seconds_since(start);
  return fmt::format(
      "{} steps: batch hashes, RNG commitments and hyperparameters as the "
      "committed schedule and config give them",
      log_->tables.steps.size());
}

// Segments [first, end): aligned blocks of K steps, K = --segment or train.checkpoint_every,
// the last one possibly shorter. Every block boundary is a checkpoint, so a replayed segment
// starts from a committed state and ends on one it must reproduce exactly: a step whose
// outputs differ from the log spoils its own segment.
void Verification::cut_segments() {
  const uint64_t n = lr_.valid_steps;
  const uint64_t every = uint64_t(rc_.train.checkpoint_every);
  K_ = every > 0 ? every : n;
  if (o_.segment > 0) {
    K_ = uint64_t(o_.segment);
    if (every == 0 ? K_ < n : K_ % every != 0)
      fail("--segment {}: segments must end at checkpoints, so K must be a multiple of "
           "train.checkpoint_every = {}{}",
           o_.segment, every, every == 0 ? " (0: the run's only checkpoint is its last step)" : "");
  }
  K_ = std::min(K_, n);
  for (uint64_t s = 0; s < n; s += K_) segments_.push_back({s, std::min(s + K_, n)});
  out_.segments = segments_.size();
}

void Verification::load_state(uint64_t step) {
  if (step == 0)
    return initial_ ? layout_->init_from(*initial_) : layout_->init(init_seed(rc_.train.seed));
  const auto start = Clock::now();
  layout_->load(checkpoint_file(step));  // the load checks the file against its state hash
  out_.cost.loads += 1;
  out_.cost.load_seconds += seconds_since(start);
}

// The behavioural fingerprint of the layout's current state against a logged one (collective).
void Verification::check_fingerprint(const FingerprintRow& row) {
  const FingerprintFields got = layout_->fingerprint(plan_->probe_batch());
  const auto& logged = row.fields;
  const uint64_t s = logged.step;
  std::string problem;
  if (root_ && o_.tolerance) {
    double worst = 0;
    for (size_t i = 0; i < got.mean_logprob.size(); ++i)
      worst = std::max(worst, double(std::abs(got.mean_logprob[i] - logged.mean_logprob.at(i))));
    out_.distances.probe_logprob = std::max(out_.distances.probe_logprob, worst);
    if (!(worst <= *o_.tolerance))
      problem = fmt::format(
          "fingerprint after step {}, field mean_logprob: distance {:.3g} exceeds the "
          "tolerance {:.3g}",
          s, worst, *o_.tolerance);
  } else if (root_ && (got.mean_logprob != logged.mean_logprob ||
                       got.argmax_digest != logged.argmax_digest)) {
    problem = fmt::format(
        "fingerprint after step {}: the model's outputs on the probe batch differ from the "
        "log's",
        s);
  }
  agree_with_root(comm_, problem);
}

// A logged val loss recomputed from the layout's current state (collective); each is recomputed
// once, the final one included.
void Verification::check_eval(const EvalRow& row) {
  const uint64_t step = row.fields.step;
  if (evals_checked_.count(step)) return;
  const float v = layout_->evaluate(dataset_->val(), rc_.data.seq_len, rc_.train.micro_batch_size,
                                    rc_.train.eval_batches);
  std::string problem;
  if (root_)
    problem = value_problem(fmt::format("eval after step {}, field value", step), v,
                            row.fields.value, o_.tolerance, out_.distances.eval);
  agree_with_root(comm_, problem);
  if (choices_) check_choice_eval(step);
  evals_checked_.insert(step);
}

// The multiple-choice rows after `step` rescored from the current state (collective). Exact
// replay compares their bits; a tolerance replay their relative distance, as for the val loss.
void Verification::check_choice_eval(uint64_t step) {
  const ChoiceScore score = score_choices(*layout_, *choices_);
  std::string problem;
  const auto rows = choice_rows_.find(step);
  if (rows == choice_rows_.end() || rows->second.size() != 2) {
    problem = fmt::format("eval after step {}: the log lacks its multiple-choice rows", step);
  } else if (root_) {
    for (const EvalRow* row : rows->second) {
      const bool norm = row->fields.metric == "acc_norm";
      problem = value_problem(fmt::format("eval after step {}, choice {} ({} of {} examples)", step,
                                          row->fields.metric,
                                          norm ? score.correct_norm : score.correct,
                                          score.examples),
                              norm ? score.acc_norm() : score.acc(), row->fields.value,
                              o_.tolerance, out_.distances.eval);
      if (!problem.empty()) break;
    }
  }
  agree_with_root(comm_, problem);
}

// A checkpoint the replay passes: its committed state must be the replayed one (collective).
void Verification::check_checkpoint(uint64_t step) {
  if (!o_.tolerance) {
    // In the formula of the committed file's version (runs from older builds hold version 2).
    const uint32_t version = read_checkpoint_info(checkpoint_file(step)).version;
    const Digest h = layout_->state_hash(log_->genesis, version);  // rank 0 has it
    agree_with_root(
        comm_, root_ && h != states_.at(step)
                   ? fmt::format("checkpoint after step {}: the replayed state hashes to {}, "
                                 "the log committed {}",
                                 step, to_hex(h).substr(0, 16),
                                 to_hex(states_.at(step)).substr(0, 16))
                   : "");
    return;
  }
  // Other hardware: the replayed weights against the committed checkpoint's.
  const torch::Tensor mine = layout_->full_params();
  std::string problem;
  if (root_) {
    const Checkpoint c = load_checkpoint_weights(checkpoint_file(step));
    const double d = (mine - c.params).norm().item<double>() /
                     std::max(c.params.norm().item<double>(), 1e-30);
    out_.distances.weights = std::max(out_.distances.weights, d);
    if (!(d <= *o_.tolerance))
      problem = fmt::format(
          "checkpoint after step {}: the replayed weights are at relative L2 distance "
          "{:.3g} from the committed ones, beyond the tolerance {:.3g}",
          step, d, *o_.tolerance);
  }
  agree_with_root(comm_, problem);
}

// The segments to replay, in order. The first and the last segment always: the initialisation
// from the committed seed, and the state the published model is exported from. Then c draws,
// uniform with replacement, over the segments between them, all of exactly K steps: if a
// fraction f of all steps is bad and none is in the first or last segment, at least a fraction f
// of the middle segments is bad, and c draws miss them all with probability at most (1 - f)^c.
// A board's job replays the segments it was assigned instead.
std::vector<uint64_t> Verification::choose_segments() {
  std::set<uint64_t> replay;
  if (o_.segments) {
    for (uint64_t k : *o_.segments) {
      if (k >= segments_.size())
        fail("segment {} was assigned, but the run has {} segments of {} steps", k,
             segments_.size(), K_);
      replay.insert(k);
    }
    out_.challenge_source = "assigned";
    if (const auto p = o_.probe_after_step; p && !replay.empty()) {
      bool inside = false;
      for (uint64_t k : replay) inside |= segments_[k].first < *p && *p < segments_[k].second;
      if (!inside)
        fail("the state after step {} was asked for, which is inside no assigned segment", *p);
    }
    return {replay.begin(), replay.end()};
  }
  const uint64_t middle = segments_.size() > 2 ? segments_.size() - 2 : 0;
  const Digest key = challenge_key(o_, lr_, comm_);
  out_.challenge_source = challenge_source_text(o_, lr_);
  replay = {0, segments_.size() - 1};
  out_.always_replayed = {segments_.front().first, segments_.back().first};
  out_.draws = middle > 0 ? o_.challenges : 0;
  for (uint64_t k : draw_segments(key, out_.draws, segments_.size())) {
    out_.drawn.push_back(segments_[k].first);
    replay.insert(k);
  }
  return {replay.begin(), replay.end()};
}

// The last committed checkpoint at or before step `first`.
uint64_t Verification::start_of(uint64_t first) const {
  const auto after = states_.upper_bound(first);
  return after == states_.begin() ? 0 : std::prev(after)->first;
}

// The plan, priced before anything is replayed: the steps to run (from the checkpoint before
// each segment, or on from the previous segment in exact mode) and what the trainer's own step
// times for them add up to.
void Verification::price_plan(const std::vector<uint64_t>& order) {
  const Tables& t = log_->tables;
  uint64_t planned = 0, at = 0;
  double logged = 0;
  bool loaded = false;
  for (uint64_t k : order) {
    const auto [first, end] = segments_[k];
    const uint64_t from = start_of(first);
    if (!(loaded && !o_.tolerance && at >= from && at <= first)) at = from;
    loaded = true;
    for (uint64_t s = at; s < end; ++s) logged += t.steps[s].timing.seconds;
    planned += end - at;
    at = end;
  }
  progress(fmt::format("  plan: {} steps to replay ({} % of the run's {}) in {} segment(s); the "
                       "trainer's step times for them add up to {}",
                       planned, planned * 100 / std::max<uint64_t>(t.steps.size(), 1),
                       t.steps.size(), order.size(), format_duration(logged)));
  replay_start_ = last_line_ = Clock::now();
  planned_ = planned;
}

// Replays segment k with the trainer's own step, checking every logged field, fingerprint, eval
// and checkpoint it passes. Starts from the last checkpoint at or before the segment, or, in
// exact mode, goes on from where the previous segment's replay stopped when that is on the way
// (it was checked).
void Verification::replay_segment(uint64_t k, bool have_state) {
  const Tables& t = log_->tables;
  const auto [first, end] = segments_[k];
  out_.challenged.push_back(first);
  const uint64_t from = start_of(first);
  const uint64_t at = uint64_t(layout_->steps_done());
  if (!(have_state && !o_.tolerance && at >= from && at <= first)) load_state(from);
  const uint64_t cur = uint64_t(layout_->steps_done());
  progress(cur == first
               ? fmt::format("  replaying steps {} to {}", first, end - 1)
               : fmt::format("  replaying steps {} to {} (from step {})", first, end - 1, cur));
  for (uint64_t s = cur; s < end; ++s) {
    const auto start = Clock::now();
    const StepRecord rec = train_step(*layout_, plan_->context());
    out_.cost.replay_seconds += seconds_since(start);
    out_.cost.logged_seconds += t.steps[s].timing.seconds;
    out_.cost.replayed_steps += 1;
    compare_step(step_fields(rec), t.steps[s].fields, o_.tolerance, out_.distances);
    if (auto p = fingerprints_.find(s + 1); p != fingerprints_.end()) check_fingerprint(*p->second);
    if (auto e = evals_.find(s + 1); e != evals_.end()) check_eval(*e->second);
    if (states_.count(s + 1)) check_checkpoint(s + 1);
    if (o_.probe_after_step == s + 1) {
      const Digest h = layout_->state_hash(log_->genesis);  // collective; rank 0 has it
      if (root_) out_.probe_state = h;
    }
    // A line every 10 s at most, with the ETA from this replay's own pace.
    ++replayed_;
    if (seconds_since(last_line_) >= 10 && replayed_ < planned_) {
      last_line_ = Clock::now();
      const double spent = seconds_since(replay_start_);
      progress(fmt::format("    step {}: {} of {} steps replayed, ETA {}", s + 1, replayed_,
                           planned_,
                           format_duration(spent / double(replayed_) *
                                           double(planned_ - replayed_))));
    }
  }
}

std::string Verification::challenges() {
  const std::vector<uint64_t> order = choose_segments();
  if (o_.segments && order.empty()) return "no segment assigned";
  price_plan(order);
  bool have_state = false;
  for (uint64_t k : order) {
    replay_segment(k, have_state);
    have_state = true;
  }
  const std::string how = o_.tolerance ? fmt::format("within tolerance {:.3g}", *o_.tolerance)
                                       : std::string("bit for bit");
  if (o_.segments)
    return fmt::format("segment(s) {} of {} (steps {} to {}) replayed {} on {} process(es)",
                       fmt::join(order, ", "), segments_.size(), segments_[order.front()].first,
                       segments_[order.back()].second - 1, how, comm_.size());
  const uint64_t middle = segments_.size() > 2 ? segments_.size() - 2 : 0;
  return fmt::format(
      "{} of {} segments ({} steps) replayed {} on {} process(es): the first and the last, "
      "and {} draw(s) from the {} between them ({})",
      order.size(), segments_.size(), out_.cost.replayed_steps, how, comm_.size(), out_.draws,
      middle, out_.challenge_source);
}

// A run that declares a nondeterministic setting and differs on replay only in the step's
// outputs is an honest run that cannot be checked, not a proven lie: the checks that need no
// replay still run, and the verdict is "not reproducible".
void Verification::excuse_declared_nondeterminism() {
  if (o_.tolerance || nondeterminism_.empty() || !failed_ || !out_.stages.back().outputs_differ)
    return;
  failed_ = false;
  excused_ = true;
  out_.reason = fmt::format("{}; replay differs at {}", nondeterminism_, out_.stages.back().detail);
}

// model.safetensors is the export of the last checkpoint, which the log's last fingerprints
// describe.
std::string Verification::final_model() {
  const fs::path published = o_.run / "model.safetensors";
  if (!fs::exists(published)) mismatch(published.string() + " is missing");
  const uint64_t last = lr_.valid_steps;
  if (!states_.count(last)) mismatch(fmt::format("no checkpoint after the last step {}", last));
  load_state(last);
  // A directory of its own, removed on every way out: the export writes config.json beside the
  // model, which verifications running side by side must not share.
  struct Scratch {
    fs::path dir;
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } scratch{fs::temp_directory_path() / fmt::format("wit-verify-{}-{}", ::getpid(), last)};
  fs::create_directories(scratch.dir);
  const fs::path mine = scratch.dir / "model.safetensors";
  layout_->export_model(mine, {{"format", "pt"},
                               {"wit.step", std::to_string(last)},
                               {"wit.manifest_root", to_hex(log_->meta.manifest_root)}});
  std::string problem;
  if (root_) {
    const std::string bytes = read_text_file(published);
    out_.model_sha256 = sha256(bytes);
    const bool same = read_text_file(mine) == bytes;
    if (!same)
      problem = fmt::format("{} is not the export of the checkpoint after step {}",
                            published.string(), last);
  }
  agree_with_root(comm_, problem, false);
  const Fingerprint w = layout_->weight_fingerprint();  // exact bits: any hardware agrees
  if (last > 0 && w != log_->tables.steps[last - 1].fields.weight_fingerprint)
    mismatch(fmt::format("the last checkpoint's weight fingerprint {} is not the one logged "
                         "after step {}",
                         to_hex(w.data(), w.size()), last - 1));
  if (auto p = fingerprints_.find(last); p != fingerprints_.end()) check_fingerprint(*p->second);
  return fmt::format(
      "model.safetensors is exactly the last checkpoint (after step {}), whose weight and "
      "behavioural fingerprints are the logged ones",
      last);
}

// The final val loss recomputed, and every held-out document excluded from training.
std::string Verification::evaluation() {
  const uint64_t last = lr_.valid_steps;
  const auto final_eval = evals_.find(last);
  if (final_eval == evals_.end()) mismatch("the log has no final val loss");
  check_eval(*final_eval->second);
  const DataIndex index(dataset_->manifest(), RunFacts::from_log(*log_, lr_), data_dir_.string());
  size_t held_out = 0;
  for (auto& d : dataset_->manifest().documents) {
    if (d.split != data::kSplitVal) continue;
    const Answer a = index.query_id(d.id);
    if (a.verdict != Verdict::HeldOut)
      mismatch(fmt::format("held-out document {} is {}", d.id, verdict_name(a.verdict)));
    ++held_out;
  }
  std::string choice;
  if (choices_) {
    const auto& rows = choice_rows_.at(last);
    choice = fmt::format(" and multiple-choice acc {} acc_norm {} over {} examples (file SHA-256 "
                         "{})",
                         rows[0]->fields.value, rows[1]->fields.value, choices_->examples.size(),
                         rc_.train.choice_eval_sha256.substr(0, 16));
  }
  return fmt::format("final val loss {}{} recomputed {}; {} held-out documents excluded",
                     final_eval->second->fields.value, choice,
                     o_.tolerance ? "within tolerance" : "exactly", held_out);
}

void Verification::decide() {
  if (failed_) {
    out_.outcome = Outcome::Rejected;
    for (auto& st : out_.stages)
      if (!st.passed && !(excused_ && st.name == "challenges")) {
        out_.reason = st.name + ": " + st.detail;
        break;
      }
  } else if (o_.tolerance) {
    // Tolerance mode asks for closeness, not equal bits: a declared nondeterminism is no excuse
    // and no obstacle.
    out_.outcome = Outcome::ConsistentWithinTolerance;
    out_.reason =
        fmt::format("replayed within relative tolerance {:.3g}, not bit for bit", *o_.tolerance);
  } else if (!nondeterminism_.empty()) {
    out_.outcome = Outcome::NotReproducible;
    if (out_.reason.empty())
      out_.reason = nondeterminism_ +
                    "; the challenged segments happened to replay exactly, but the unchallenged "
                    "ones need not, so the run cannot be certified";
  } else {
    out_.outcome = Outcome::Certified;
  }
  out_.certified = out_.outcome == Outcome::Certified;
}

// What the draws bound: the probability that a run with a fraction f of bad steps passes.
nlohmann::json Verification::guarantee() const {
  const int64_t c = out_.draws;
  const bool everything = out_.challenged.size() == out_.segments;  // every step recomputed
  const bool fiat_shamir = o_.source == ChallengeSource::FiatShamir;
  json bounds = json::array();
  for (double f : {0.01, 0.05, 0.1, 0.25}) {
    json b = {{"f", f},
              {"rejected_with_probability_at_least",
               everything    ? 1.0
               : fiat_shamir ? fiat_shamir_bound(f, c, o_.grinding_bits)
                             : detection_probability(f, c)}};
    if (fiat_shamir && !everything) b["if_the_trainer_did_not_retry"] = detection_probability(f, c);
    bounds.push_back(b);
  }
  const std::string computed =
      o_.tolerance ? "computed as logged (within the tolerance)" : "computed as logged";
  if (everything)
    return {{"challenges", c},
            {"statement", fmt::format("every segment was replayed: every step was {}", computed)},
            {"bounds", bounds}};
  std::string statement = fmt::format(
      "the first and the last segment were replayed, and {} segments drawn uniformly from the "
      "other {}: a run in which at least a fraction f of the steps were not {} is rejected "
      "with probability >= 1 - (1 - f)^{}",
      c, out_.segments - 2, computed, c);
  if (fiat_shamir)
    statement += fmt::format(
        ", but only against a trainer who did not retry: the challenges follow from the "
        "signed head, which the trainer can vary and re-sign at will; against one who tries "
        "up to 2^{} logs the bound is 1 - 2^{} (1 - f)^{}, and 0 (no guarantee) where that is "
        "negative",
        o_.grinding_bits, o_.grinding_bits, c);
  return {{"challenges", c}, {"statement", statement}, {"bounds", bounds}};
}

// What the certificate may say of the checkpoints nobody loaded: what the structure stage
// showed, and no more.
nlohmann::json Verification::checkpoints_statement() const {
  const Availability& a = out_.availability;
  const int64_t leaf_bytes = checkpoint_leaf_bytes(int64_t(log_->meta.num_params));
  json checkpoints = {{"committed", a.checkpoints},
                      {"leaf_bytes", leaf_bytes},
                      {"leaves_sampled_each", a.whole ? json(nullptr) : json(a.leaves_per_checkpoint)},
                      {"whole", a.whole}};
  checkpoints["statement"] =
      a.whole || a.leaves_per_checkpoint == a.leaves_of_checkpoint
          ? fmt::format("each of the {} committed checkpoints was read whole and matches its "
                        "committed state hash",
                        a.checkpoints)
          : fmt::format(
                "each of the {} committed checkpoints is present at its committed size "
                "with a leaf table that hashes to its committed state hash, and {} of its "
                "{}-byte leaves, drawn from the challenge source, match that table: a "
                "checkpoint of which a fraction g of the leaves is missing or altered "
                "passes with probability at most (1 - g)^{}{}; the checkpoints a replay "
                "loaded were read whole",
                a.checkpoints, a.leaves_per_checkpoint, leaf_bytes, a.leaves_per_checkpoint,
                o_.source == ChallengeSource::FiatShamir ? " against a trainer who did not retry"
                                                         : "");
  return checkpoints;
}

// The unsigned certificate of a certified (or within-tolerance) run: sign_certificate signs it.
nlohmann::json Verification::certificate() const {
  json checks = json::array();
  for (auto& st : out_.stages)
    checks.push_back({{"stage", st.name}, {"passed", st.passed}, {"detail", st.detail}});
  json source = {{"kind", challenge_kind_name(o_.source)}, {"detail", out_.challenge_source}};
  if (o_.source == ChallengeSource::VerifierSeed) source["seed"] = o_.seed;
  if (o_.source == ChallengeSource::FiatShamir) source["grinding_budget_bits"] = o_.grinding_bits;
  json c = {
      {"format", kCertificateFormat},
      {"run", fs::absolute(o_.run).filename().string()},
      {"model_sha256", to_hex(out_.model_sha256)},
      {"steps", out_.steps},
      {"segments", out_.segments},
      {"segment_steps", K_},
      {"always_replayed_segments", out_.always_replayed},
      {"drawn_segments", out_.drawn},
      {"challenged_segments", out_.challenged},
      {"challenge_source", source},
      {"replayed_on", fmt::format("{} process(es), layout {}", comm_.size(), o_.mode)},
      {"checks", checks},
      {"result", outcome_name(out_.outcome)},
      {"guarantee", guarantee()},
      {"verified_at", utc_now()},
  };
  c["checkpoints"] = checkpoints_statement();
  c.update(run_identity(*log_, *lr_.signed_heads, states_.at(lr_.valid_steps)));
  if (o_.tolerance)
    c["tolerance"] = {{"relative", *o_.tolerance},
                      {"observed",
                       {{"loss", out_.distances.loss},
                        {"grad_norm", out_.distances.grad_norm},
                        {"probe_logprob", out_.distances.probe_logprob},
                        {"eval", out_.distances.eval},
                        {"weights", out_.distances.weights}}}};
  return c;
}

}  // namespace

VerifyReport verify_run(const VerifyOptions& o, dist::Communicator& comm,
                        const Progress& progress) {
  return Verification(o, comm, progress).run();
}

}  // namespace wit::witness
