// A dishonest trainer, for tests. Every attack leaves RUN a well-formed, chained log signed with
// KEY that claims the run's committed schedule; only replay, the data audit or the published
// files can give it away.
//
//   wit_test_dishonest RUN KEY ATTACK [ARGS...]
//
// Log rewrites: RUN's witness log is edited in place, rechained and re-signed.
//     misreport-lr STEP          log twice the learning rate applied at STEP
//     misreport-clip STEP        log another clipping threshold at STEP
//     other-batch STEP           log the hash of another batch than the one trained at STEP
//     forge-loss STEP...         log other loss bits at each STEP (a forged step)
//     skip STEP                  log STEP as done while computing nothing (a copy of STEP-1)
//     truncate N                 drop every step from N on
//     inflate-eval               log a better final val loss
//     splice-checkpoint STEP FILE  put FILE's state (another run's checkpoint) in place of the
//                                checkpoint after STEP, under this run's header, and log its hash
//     scale-moments STEP FACTOR  multiply AdamW's m in the checkpoint after STEP by FACTOR (the
//                                weights kept), and log its hash: the next step from it moves
//                                the weights as the trainer likes
//     nan-moments STEP FACTOR    multiply AdamW's v in the checkpoint after STEP by FACTOR and
//                                make one element NaN (a distance that is NaN shows nothing)
//     nan-probe STEP             log NaN as the first probe log-probability after STEP
//     claim-seed SEED            claim the run started from another initialisation seed
//     second-final-eval          add a val/loss row of 1.0 for the last step, before the real one
//     extra-metric               add a test/accuracy row for the last step
//     inflate-choice             log a multiple-choice acc_norm a quarter higher at the end
//     grind-fiat-shamir C STEP...  forge the loss at each STEP, then vary the first forged loss
//                                and re-sign until the Fiat–Shamir draws of C challenges miss
//                                every forged segment (prints the tries it took)
//
// Dishonest training: RUN (an honest run, or a copy) gives the config in its config.yaml; its
// log, checkpoints and model are replaced by a run trained in-process with the trainer's own
// step, fingerprints, evals, checkpoints and export, as `wit train` on one process does, except:
//     honest                     nothing (every step through the liar's own step function): the
//                                log must equal `wit train`'s, hash for hash
//     inject-sample STEP         micro-batch 0 of STEP also trains on a window from elsewhere
//                                in the train stream
//     drop-sample STEP           micro-batch 0 of STEP loses its last sample
//     reorder STEP               STEP and STEP+1 train on each other's batches
//     held-out STEP              STEP trains on val windows (the evaluation's own)
//     fine-tuned OTHER_RUN       starts from OTHER_RUN's last checkpoint's weights (fresh
//                                optimizer), then trains every step honestly
//     interpolate OTHER_RUN      the Proof-of-Learning spoof: the weights after step t are
//                                θ_0 + (t/T)(θ* − θ_0), θ* OTHER_RUN's last checkpoint; each
//                                step logs the honest loss, gradient norm and optimizer moments
//                                at the current weights, and model.safetensors is θ*
// The log records the committed batch hashes, token counts, RNG commitments and
// hyperparameters throughout.
//
// Dataset rewrites (RUN is a prepared data dir, KEY is unused: -): its manifest is rewritten
// with its root recomputed, as the trainer who prepared the data could, before training on it.
//     hide-document ID           record document ID under the hash of other text, so that
//                                wit query would answer not-in-dataset for it
#include <limits>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "trainer/batch.h"
#include "trainer/checkpoint.h"
#include "trainer/data/dataset.h"
#include "trainer/dist/communicator.h"
#include "record/run_config.h"
#include "trainer/layout.h"
#include "trainer/run_plan.h"
#include "trainer/runtime.h"
#include "trainer/safetensors.h"
#include "trainer/step.h"
#include "trainer/witnessing.h"
#include "record/reader.h"
#include "record/writer.h"
#include "verify/verify.h"
#include "trainer/cpu_numerics.h"

namespace wit::witness {
namespace {

// Recomputes every hash and anchor of `t` from its fields and signs the final heads.
void rechain_and_sign(const RunMeta& meta, Tables& t, const SigningKey& key) {
  const Digest genesis = meta.genesis();
  Digest prev = genesis;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    t.steps[i].fields.step = i;
    t.steps[i].prev = prev;
    t.steps[i].hash = record_hash(prev, t.steps[i].fields);
    prev = t.steps[i].hash;
  }
  auto side = [&](auto& rows, auto hash_fn) {
    Digest p = genesis;
    for (auto& r : rows) {
      r.anchor = r.fields.step == 0 ? genesis : t.steps.at(r.fields.step - 1).hash;
      r.prev = p;
      r.hash = hash_fn(p, r.anchor, r.fields);
      p = r.hash;
    }
  };
  side(t.fingerprints, fingerprint_hash);
  side(t.checkpoints, checkpoint_hash);
  side(t.evals, eval_hash);
  SignatureRow s;
  s.heads =
      heads_of(genesis, t, t.steps.size(), t.fingerprints.size(), t.checkpoints.size(), t.evals.size());
  s.head = head_hash(s.heads);
  s.public_key = key.public_key();
  s.signature = key.sign(signed_message(s.head));
  t.signatures = {s};
}

float other_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u ^= 0x40;
  std::memcpy(&v, &u, 4);
  return v;
}

template <typename Rows>
void drop_after(Rows& rows, uint64_t n) {
  Rows kept;
  for (auto& r : rows)
    if (r.fields.step <= n) kept.push_back(r);
  rows = kept;
}

int rewrite(int argc, char** argv) {
  const std::filesystem::path file = std::filesystem::path(argv[1]) / kLogFileName;
  const SigningKey key = SigningKey::load(argv[2]);
  const std::string attack = argv[3];
  auto arg = [&](int i) -> uint64_t {
    if (argc <= 4 + i) fail("{} needs an argument", attack);
    return std::stoull(argv[4 + i]);
  };
  WitnessLog log = read_log(file);
  RunMeta meta = log.meta;
  Tables& t = log.tables;
  if (attack == "misreport-lr") {
    t.steps.at(arg(0)).fields.lr *= 2;
  } else if (attack == "misreport-clip") {
    t.steps.at(arg(0)).fields.grad_clip += 0.5f;
  } else if (attack == "other-batch") {
    t.steps.at(arg(0)).fields.batch_hash = sha256("a batch that was not trained");
  } else if (attack == "forge-loss") {
    for (int i = 4; i < argc; ++i) {
      auto& f = t.steps.at(std::stoull(argv[i])).fields;
      f.loss = other_bits(f.loss);
    }
  } else if (attack == "skip") {
    const uint64_t s = arg(0);
    StepFields copy = t.steps.at(s - 1).fields;
    copy.batch_hash = t.steps.at(s).fields.batch_hash;  // claims the right data
    copy.rng_commitment = t.steps.at(s).fields.rng_commitment;
    copy.lr = t.steps.at(s).fields.lr;
    t.steps.at(s).fields = copy;
  } else if (attack == "truncate") {
    const uint64_t n = arg(0);
    t.steps.resize(n);
    drop_after(t.fingerprints, n);
    drop_after(t.checkpoints, n);
    drop_after(t.evals, n);
  } else if (attack == "inflate-eval") {
    t.evals.back().fields.value *= 0.5f;
  } else if (attack == "splice-checkpoint") {
    const uint64_t s = arg(0);
    if (argc < 6) fail("splice-checkpoint needs STEP and FILE");
    const Checkpoint other = load_checkpoint(argv[5]);
    const auto ck = checkpoint_path(std::filesystem::path(argv[1]), int64_t(s));
    const Digest state = save_checkpoint(ck, {int64_t(s), other.info.num_params, meta.genesis(), {}},
                                         other.params, other.m, other.v);
    for (auto& c : t.checkpoints)
      if (c.fields.step == s) c.fields.state_hash = state;
  } else if (attack == "scale-moments") {
    const uint64_t s = arg(0);
    if (argc < 6) fail("scale-moments needs STEP and FACTOR");
    const auto ck = checkpoint_path(std::filesystem::path(argv[1]), int64_t(s));
    const Checkpoint c = load_checkpoint(ck);
    const Digest state = save_checkpoint(ck, {int64_t(s), c.info.num_params, meta.genesis(), {}},
                                         c.params, c.m * std::stod(argv[5]), c.v);
    for (auto& row : t.checkpoints)
      if (row.fields.step == s) row.fields.state_hash = state;
  } else if (attack == "nan-moments") {
    const uint64_t s = arg(0);
    if (argc < 6) fail("nan-moments needs STEP and FACTOR");
    const auto ck = checkpoint_path(std::filesystem::path(argv[1]), int64_t(s));
    const Checkpoint c = load_checkpoint(ck);
    torch::Tensor v = c.v * std::stod(argv[5]);
    v[0] = std::numeric_limits<float>::quiet_NaN();
    const Digest state = save_checkpoint(ck, {int64_t(s), c.info.num_params, meta.genesis(), {}},
                                         c.params, c.m, v);
    for (auto& row : t.checkpoints)
      if (row.fields.step == s) row.fields.state_hash = state;
  } else if (attack == "nan-probe") {
    for (auto& row : t.fingerprints)
      if (row.fields.step == arg(0)) row.fields.mean_logprob.at(0) = std::numeric_limits<float>::quiet_NaN();
  } else if (attack == "claim-seed") {
    // The run's weights came from elsewhere; the liar claims an initialisation from seed SEED
    // and recommits every step's generator seeds to match the claim (the seed derivation is
    // public: trainer/step.cpp micro_batch_seed).
    const uint64_t claimed = arg(0);
    for (auto& row : t.steps) {
      std::vector<uint64_t> seeds;
      const RunConfig rc = run_config_from(parse_committed(meta.committed_yaml, "committed"));
      for (int64_t i = 0; i < rc.train.micro_batches; ++i)
        seeds.push_back(digest_prefix_u64(Sha256()
                                              .update("wit-rng-v1")
                                              .update_u64(claimed)
                                              .update_u64(row.fields.step)
                                              .update_u64(uint64_t(i))
                                              .finish()));
      row.fields.rng_commitment = rng_commitment(seeds);
    }
    const std::string seed = std::to_string(claimed);
    std::string& yaml = meta.committed_yaml;
    const size_t train = yaml.find("train:");
    const size_t at = yaml.find("  seed: ", train);
    const size_t eol = yaml.find('\n', at);
    yaml.replace(at, eol - at, "  seed: " + seed);
    // The checkpoints are bound to the run's genesis, which the claim changes: rewrite them for
    // the claimed run, same state, and log their new hashes.
    for (auto& row : t.checkpoints) {
      const auto ck = checkpoint_path(std::filesystem::path(argv[1]), int64_t(row.fields.step));
      const Checkpoint c = load_checkpoint(ck);
      row.fields.state_hash = save_checkpoint(
          ck, {c.info.step, c.info.num_params, meta.genesis(), {}}, c.params, c.m, c.v);
    }
  } else if (attack == "second-final-eval") {
    EvalRow fake = t.evals.back();
    fake.fields.value = 1.0f;
    t.evals.insert(t.evals.end() - 1, fake);
  } else if (attack == "extra-metric") {
    EvalRow extra = t.evals.back();
    extra.fields.split = "test";
    extra.fields.metric = "accuracy";
    extra.fields.value = 0.99f;
    t.evals.push_back(extra);
  } else if (attack == "inflate-choice") {
    EvalRow& last = t.evals.back();
    if (last.fields.metric != "acc_norm") fail("the log's last eval row is not a choice acc_norm");
    last.fields.value = std::min(1.0f, last.fields.value + 0.25f);
  } else if (attack == "grind-fiat-shamir") {
    const int64_t c = int64_t(arg(0));
    if (argc < 6) fail("grind-fiat-shamir needs C and at least one STEP");
    const RunConfig rc = run_config_from(parse_committed(meta.committed_yaml, "committed"));
    const uint64_t n = t.steps.size(), K = uint64_t(rc.train.checkpoint_every);
    const uint64_t segments = (n + K - 1) / K;
    std::set<uint64_t> forged;  // segments holding a forged step
    for (int i = 5; i < argc; ++i) {
      const uint64_t s = std::stoull(argv[i]);
      t.steps.at(s).fields.loss = other_bits(t.steps.at(s).fields.loss);
      forged.insert(s / K);
    }
    StepFields& free_bits = t.steps.at(std::stoull(argv[5])).fields;
    for (uint64_t tries = 1;; ++tries) {
      rechain_and_sign(meta, t, key);
      const SignatureRow& sig = t.signatures.back();
      Heads signed_head = sig.heads;
      signed_head.genesis = meta.genesis();
      bool caught = false;
      for (uint64_t k : draw_segments(fiat_shamir_key(signed_head), c, segments))
        caught |= forged.count(k) > 0;
      if (!caught) {
        fmt::print("grind-fiat-shamir: a log whose {} draws miss every forged segment after {} "
                   "tries\n",
                   c, tries);
        break;
      }
      if (tries > 1'000'000) fail("grind-fiat-shamir: no escaping log in a million tries");
      free_bits.loss = std::nextafter(free_bits.loss, 1e30f);  // another lie, another head
    }
  } else {
    fail("unknown attack {}", attack);
  }
  rechain_and_sign(meta, t, key);
  write_log_file(file, meta, t, log.superseded);
  fmt::print("{}: rewrote {} ({}) and signed it with key {}\n", attack, file.string(),
             t.steps.size(), key_id(key.public_key()));
  return 0;
}

}  // namespace
}  // namespace wit::witness

namespace wit {
namespace {

namespace fs = std::filesystem;

// The tokens micro-batch `micro` trains on, given its committed tokens (b rows of T+1); any
// number of rows.
using Feed = std::function<std::vector<uint16_t>(int64_t micro, std::vector<uint16_t> committed)>;
using FeedAt = std::function<std::optional<Feed>(int64_t step)>;

// The committed schedule's micro-batches, except at the steps where the liar feeds others: the
// step's batch source, so that the liar trains with the trainer's own step.
class LyingBatches : public BatchSource {
 public:
  LyingBatches(const BatchSource& committed, const FeedAt& feed_at)
      : BatchSource(committed), feed_at_(feed_at) {}
  std::vector<uint16_t> micro_batch_tokens(int64_t step, int64_t micro) const override {
    auto tokens = BatchSource::micro_batch_tokens(step, micro);
    if (auto feed = feed_at_(step)) return (*feed)(micro, std::move(tokens));
    return tokens;
  }

 private:
  const FeedAt& feed_at_;
};

torch::Tensor last_checkpoint_params(const fs::path& run, int64_t num_params) {
  const auto file = latest_checkpoint(run);
  if (!file) fail("{} has no checkpoint", run.string());
  Checkpoint c = load_checkpoint(*file);
  if (c.info.num_params != num_params)
    fail("{} holds {} parameters, the run's model {}", file->string(), c.info.num_params,
         num_params);
  return c.params;
}


bool is_training_attack(const std::string& a) {
  for (const char* name : {"honest", "inject-sample", "drop-sample", "reorder", "held-out",
                           "fine-tuned", "interpolate"})
    if (a == name) return true;
  return false;
}

int retrain(const fs::path& dir, const fs::path& key_file, const std::string& attack,
            const std::vector<std::string>& args) {
  if (args.empty() && attack != "honest") fail("{} needs an argument", attack);
  const std::string arg = args.empty() ? "" : args[0];
  // The run's resolved config (its data.dir included) from the run directory.
  const auto cfg = config::Config::load(dir / "config.yaml", run_schema());
  const RunConfig rc = run_config_from(cfg);
  set_compute_threads(int(rc.train.threads));
  keep_freed_memory();
  const auto dataset = data::Dataset::open(rc.data.dir);
  RunPlan plan(rc, dataset);
  const BatchSource& batches = plan.batches();
  const int64_t total = rc.train.steps, T = rc.data.seq_len, b = rc.train.micro_batch_size;
  auto single = dist::make_single_process();
  auto layout = make_layout("ddp", rc.model, rc.train.micro_batches, *single);
  const int64_t P = layout->num_params();
  layout->init(init_seed(rc.train.seed));
  torch::Tensor& params = layout->local_params();
  const OptimizerState& opt = layout->optimizer();

  // What step s trains on instead of its committed batch (none: train_step as is), and what the
  // liar does to the state after it.
  FeedAt feed_at = [](int64_t) { return std::nullopt; };
  std::function<void(StepRecord&)> after_step;
  const int64_t at = attack == "honest" || attack == "fine-tuned" || attack == "interpolate"
                         ? -1
                         : int64_t(std::stoull(arg));
  if (at >= total) fail("{}: step {} is past the run's {} steps", attack, at, total);
  auto only_at = [&](int64_t step, Feed f) {
    feed_at = [step, f](int64_t s) -> std::optional<Feed> {
      if (s == step) return f;
      return std::nullopt;
    };
  };
  torch::Tensor theta0, delta, target;
  if (attack == "honest") {
    feed_at = [](int64_t) -> std::optional<Feed> {
      return Feed([](int64_t, std::vector<uint16_t> t) { return t; });
    };
  } else if (attack == "inject-sample") {
    // The window after the micro-batch's first sample in the train stream.
    const uint64_t extra = (batches.sample_id(at, 0, 0) + 1) % batches.num_samples();
    only_at(at, [&, extra](int64_t micro, std::vector<uint16_t> t) {
      if (micro != 0) return t;
      std::vector<uint16_t> w(size_t(T + 1));
      dataset.train().read(extra * uint64_t(T), uint64_t(T + 1), w.data());
      t.insert(t.end(), w.begin(), w.end());
      return t;
    });
  } else if (attack == "drop-sample") {
    if (b < 2) fail("drop-sample needs train.micro_batch_size >= 2");
    only_at(at, [T](int64_t micro, std::vector<uint16_t> t) {
      if (micro == 0) t.resize(t.size() - size_t(T + 1));
      return t;
    });
  } else if (attack == "reorder") {
    if (at + 1 >= total) fail("reorder needs a step after {}", at);
    feed_at = [&, at](int64_t s) -> std::optional<Feed> {
      if (s != at && s != at + 1) return std::nullopt;
      const int64_t other = s == at ? at + 1 : at;
      return Feed([&, other](int64_t micro, std::vector<uint16_t>) {
        return batches.micro_batch_tokens(other, micro);
      });
    };
  } else if (attack == "held-out") {
    only_at(at, [&, T, b](int64_t micro, std::vector<uint16_t>) {
      return eval_batch_tokens(dataset.val(), T, b, micro);
    });
  } else if (attack == "fine-tuned") {
    params.copy_(last_checkpoint_params(arg, P));
  } else if (attack == "interpolate") {
    target = last_checkpoint_params(arg, P);
    theta0 = params.clone();
    delta = target - theta0;
    // The step itself is honest (loss, gradient norm, moments at θ_t); the weights it leaves
    // are replaced by the next point on the line.
    after_step = [&](StepRecord& rec) {
      const int64_t t = opt.step;
      params.copy_(t == total ? target : theta0 + delta * (double(t) / double(total)));
      rec.weight_fingerprint = layout->weight_fingerprint();
    };
  } else {
    fail("unknown attack {}", attack);
  }

  for (const char* name : {witness::kLogFileName, "checkpoints", "model.safetensors",
                           "metrics.jsonl", "certificate.json"})
    fs::remove_all(dir / name);
  witness::SigningKey key = witness::SigningKey::load(key_file);
  const std::string key_name = witness::key_id(key.public_key());
  const auto meta = run_meta(cfg, dataset.manifest(), P, key.public_key(),
                             session_json(*single, rc, layout->name(), 0));
  auto log = witness::LogWriter::create(dir / witness::kLogFileName, meta, std::move(key));

  // From here on, trainer/train_loop.cpp's loop on one process, with the liar's batches.
  const LyingBatches lying_batches(batches, feed_at);
  StepContext lying = plan.context();
  lying.data = &lying_batches;
  const Digest root = dataset.manifest().root;
  int64_t saved = -1;
  auto checkpoint = [&] {
    const Digest state = layout->save(checkpoint_path(dir, opt.step),
                                      CheckpointInfo{opt.step, P, meta.genesis(), {}});
    saved = opt.step;
    log.append_checkpoint({uint64_t(opt.step), state});
    log.sign();
  };
  auto fingerprint = [&] { log.append_fingerprint(layout->fingerprint(plan.probe_batch())); };
  auto eval = [&] {
    const float v = layout->evaluate(dataset.val(), T, b, rc.train.eval_batches);
    log.append_eval({uint64_t(opt.step), "val", "loss", v});
  };
  while (opt.step < total) {
    const auto start = std::chrono::steady_clock::now();
    StepRecord rec = train_step(*layout, lying);
    // The record states the committed micro-batches, whatever the step trained on.
    const StepRecord committed = committed_inputs(plan.context(), rec.step);
    rec.batch_hash = committed.batch_hash;
    rec.rng_commitment = committed.rng_commitment;
    if (after_step) {
      torch::NoGradGuard no_grad;
      after_step(rec);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log.append_step(step_fields(rec), {unix_now(), secs});
    const int64_t done = opt.step;
    if (rc.fingerprint_after(done)) fingerprint();
    if (rc.eval_after(done) && done != total) eval();
    if (rc.checkpoint_after(done) && done != total) checkpoint();
  }
  if (saved != total) checkpoint();
  eval();
  log.sign();
  layout->export_model(
      dir / "model.safetensors",
      {{"format", "pt"}, {"wit.step", std::to_string(total)}, {"wit.manifest_root", to_hex(root)}});
  fmt::print("{}: trained {} ({} steps) and signed its log with key {}\n", attack, dir.string(),
             total, key_name);
  return 0;
}

}  // namespace
}  // namespace wit

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  try {
    if (argc < 4) wit::fail("usage: wit_test_dishonest RUN KEY ATTACK [ARGS...]");
    if (std::string(argv[3]) == "hide-document") {
      if (argc < 5) wit::fail("hide-document needs a document id");
      const auto file = std::filesystem::path(argv[1]) / wit::data::kManifestFile;
      wit::data::Manifest m = wit::data::read_manifest(file);
      m.documents.at(std::stoull(argv[4])).sha256 = wit::sha256("other text");
      m.root = wit::data::manifest_root(m);
      wit::data::write_manifest(file, m);
      return 0;
    }
    if (wit::is_training_attack(argv[3]))
      return wit::retrain(argv[1], argv[2], argv[3],
                          std::vector<std::string>(argv + 4, argv + argc));
    return wit::witness::rewrite(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_test_dishonest: {}\n", e.what());
    return 1;
  }
}
