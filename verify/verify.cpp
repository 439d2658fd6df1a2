#include "verify/verify.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <sys/random.h>

#include "core/error.h"
#include "query/query.h"
#include "record/reader.h"
#include "trainer/checkpoint.h"
#include "trainer/device_comm.h"
#include "trainer/runtime.h"
#include "trainer/safetensors.h"
#include "trainer/witnessing.h"
#include "verify/compare.h"
#include "verify/verification.h"

namespace wit::witness {

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

VerifyReport verify_run(const VerifyOptions& o, dist::Communicator& comm,
                        const Progress& progress) {
  return detail::Verification(o, comm, progress).run();
}

namespace detail {

namespace {

// Settings under which the same inputs need not give the same bits.
std::string declared_nondeterminism(const config::Config& cfg) {
  if (cfg.get_string("dist.reduction") == "arrival")
    return "dist.reduction = arrival: the trainer summed gradients over ranks in the order "
           "their messages arrived, which no replay can repeat";
  return "";
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

}  // namespace

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
  replay_model.cross_entropy = compute_->cross_entropy;
  replay_model.layer_norm = compute_->layer_norm;
  replay_model.gelu = compute_->gelu;
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

// A file the verifier gave, or else the path the run's config.yaml names under key (a hint: the
// trainer wrote it, so what it points to is checked against the committed hash).
fs::path Verification::given_or_config(const fs::path& given, const char* key) const {
  if (!given.empty() || !fs::exists(o_.run / "config.yaml")) return given;
  return config::Config::load(o_.run / "config.yaml", run_schema(), {}).get_string(key);
}

// The weights a run committed to start from (model.init_sha256), from --init-from or the run's
// config.yaml. Weights that are missing or hash otherwise are the verifier's problem to solve,
// never evidence against the trainer: an error, not a verdict.
torch::Tensor Verification::initial_weights() const {
  const fs::path from = given_or_config(o_.init_from, "model.init_from");
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
  const fs::path file = given_or_config(o_.choice_eval, "train.choice_eval");
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
  // The records wit query answers from say what was trained.
  const uint64_t fragment_tokens = dataset_->verify_documents({}, comm_.rank(), comm_.size());
  out_.tokens_in_no_document = fragment_tokens;
  out_.dataset_tokenizer = dataset_->manifest().tokenizer;
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
        verify_checkpoint(file, &hash);
        bytes += fs::file_size(file);
        continue;
      }
      bytes += verify_checkpoint_leaves(file, sample_leaves(availability_key_, step, L, per), &hash);
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
      "{} steps chained, {} signatures valid (key {}), {} checkpoints {}, dataset {}: its {} "
      "shards and {} document records match{}",
      lr_.valid_steps, lr_.signatures_valid, key_id(log_->meta.public_key), states_.size(), how,
      to_hex(log_->meta.manifest_root).substr(0, 16), dataset_->manifest().shards.size(),
      dataset_->manifest().documents.size(),
      fragment_tokens == 0
          ? std::string()
          : fmt::format(" ({} tokens continue a document begun outside their split: no text "
                        "query finds them)",
                        fragment_tokens));
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
  // The load checks what it reads against the state the log committed, from its own open.
  layout_->load(checkpoint_file(step), states_.at(step));
  out_.cost.loads += 1;
  out_.cost.load_seconds += seconds_since(start);
}

}  // namespace detail
}  // namespace wit::witness
