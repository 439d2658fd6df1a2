#include "witness/verify/verify.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "trainer/batch.h"
#include "trainer/checkpoint.h"
#include "trainer/data/dataset.h"
#include "trainer/data/split.h"
#include "trainer/run_config.h"
#include "trainer/runtime.h"
#include "trainer/safetensors.h"
#include "trainer/step.h"
#include "trainer/witnessing.h"
#include "witness/log/reader.h"
#include "witness/query/query.h"

namespace wit::witness {

namespace fs = std::filesystem;
using nlohmann::json;

double detection_probability(double f, int64_t c) { return 1.0 - std::pow(1.0 - f, double(c)); }

int64_t challenges_for(double f, double p) {
  if (!(f > 0 && f <= 1) || !(p >= 0 && p < 1))
    fail("--target must be in (0, 1] and --confidence in [0, 1), got {} and {}", f, p);
  if (f == 1) return 1;
  return std::max<int64_t>(1, int64_t(std::ceil(std::log(1 - p) / std::log(1 - f))));
}

namespace {

// A stage fails at its first mismatch: thrown, caught by the stage runner.
struct Mismatch {
  std::string what;
};
[[noreturn]] void mismatch(std::string what) { throw Mismatch{std::move(what)}; }

std::string bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return fmt::format("{} (0x{:08x})", v, u);
}

// The first field in which a replayed step differs from the logged one.
void compare_step(const StepFields& got, const StepFields& logged) {
  const uint64_t s = logged.step;
  auto f32 = [&](const char* name, float a, float b) {
    if (std::memcmp(&a, &b, 4) != 0)
      mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}", s, name, bits(a),
                           bits(b)));
  };
  auto dig = [&](const char* name, const auto& a, const auto& b) {
    if (a != b)
      mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}", s, name,
                           to_hex(a.data(), a.size()).substr(0, 16),
                           to_hex(b.data(), b.size()).substr(0, 16)));
  };
  if (got.tokens != logged.tokens)
    mismatch(fmt::format("step {}, field tokens: {} vs {}", s, got.tokens, logged.tokens));
  f32("lr", got.lr, logged.lr);
  f32("weight_decay", got.weight_decay, logged.weight_decay);
  f32("beta1", got.beta1, logged.beta1);
  f32("beta2", got.beta2, logged.beta2);
  f32("eps", got.eps, logged.eps);
  f32("grad_clip", got.grad_clip, logged.grad_clip);
  dig("batch_hash", got.batch_hash, logged.batch_hash);
  dig("rng_commitment", got.rng_commitment, logged.rng_commitment);
  f32("loss", got.loss, logged.loss);
  f32("grad_norm", got.grad_norm, logged.grad_norm);
  f32("clip_factor", got.clip_factor, logged.clip_factor);
  dig("weight_fingerprint", got.weight_fingerprint, logged.weight_fingerprint);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

VerifyReport verify_run(const VerifyOptions& o, const Progress& progress) {
  VerifyReport out;
  const fs::path log_file = o.run / kLogFileName;
  if (!fs::exists(log_file))
    fail("{} has no {}: not a run directory of a witnessed run", o.run.string(), kLogFileName);
  const WitnessLog log = read_log(log_file);
  const LogReport lr = check_log(log, o.trusted_key);
  const auto cfg =
      config::Config::parse(log.meta.config_yaml, log_file.string() + ":/meta", run_schema());
  const RunConfig rc = run_config_from(cfg);
  const fs::path data_dir = o.data.empty() ? rc.data.dir : o.data;
  const Tables& t = log.tables;
  out.steps = lr.valid_steps;

  bool failed = false;
  auto stage = [&](const char* name, const std::function<std::string()>& body) {
    Stage s{name, false, ""};
    if (failed) {
      s.detail = "not run: an earlier stage failed";
    } else {
      const auto start = std::chrono::steady_clock::now();
      try {
        s.detail = body();
        s.passed = true;
      } catch (const Mismatch& m) {
        s.detail = m.what;
      } catch (const Error& e) {
        s.detail = e.what();
      }
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      failed = !s.passed;
      progress(fmt::format("{:<11} {} ({:.1f}s): {}", name, s.passed ? "passed" : "FAILED", secs,
                           s.detail));
    }
    out.stages.push_back(s);
  };

  std::optional<data::Dataset> dataset;
  stage("structure", [&] {
    if (!lr.ok()) mismatch(lr.problems.front().text());
    if (!lr.complete)
      mismatch(fmt::format("the run is not complete: {} of {} steps recorded", lr.valid_steps,
                           log.meta.total_steps));
    if (trajectory_yaml(cfg) != log.meta.trajectory_yaml)
      mismatch("the config in /meta does not give the trajectory_yaml the genesis covers");
    dataset.emplace(data::Dataset::open(data_dir));
    if (dataset->manifest().root != log.meta.manifest_root)
      mismatch(fmt::format("dataset {} has root {}, the run committed to {}", data_dir.string(),
                           to_hex(dataset->manifest().root), to_hex(log.meta.manifest_root)));
    if (data::layout_digest(dataset->manifest()) != log.meta.data_layout)
      mismatch(fmt::format("dataset {} lays its documents out differently from the run's",
                           data_dir.string()));
    dataset->verify_shard_hashes();
    return fmt::format(
        "{} steps chained, {} signatures valid (key {}), dataset {} and its {} "
        "shards match",
        lr.valid_steps, lr.signatures_valid, key_id(log.meta.public_key),
        to_hex(log.meta.manifest_root).substr(0, 16), dataset->manifest().shards.size());
  });

  std::optional<BatchSource> batches;
  stage("data", [&] {
    batches.emplace(dataset->train(), rc.data.seq_len, rc.train.micro_batch_size,
                    rc.train.micro_batches, rc.data.seed);
    for (auto& row : t.steps) {
      const StepFields& f = row.fields;
      const auto hp = optim::hyper_at(rc.optim, int64_t(f.step), rc.train.steps);
      StepFields want = f;
      want.lr = hp.lr;
      want.weight_decay = hp.weight_decay;
      want.beta1 = hp.beta1;
      want.beta2 = hp.beta2;
      want.eps = hp.eps;
      want.grad_clip = hp.grad_clip;
      want.tokens = uint64_t(rc.tokens_per_step());
      std::vector<Digest> micro;
      std::vector<uint64_t> seeds;
      for (int64_t i = 0; i < rc.train.micro_batches; ++i) {
        const auto tokens = batches->micro_batch_tokens(int64_t(f.step), i);
        micro.push_back(micro_batch_hash(tokens.data(), tokens.size()));
        seeds.push_back(micro_batch_seed(rc.train.seed, int64_t(f.step), i));
      }
      want.batch_hash = batch_hash(micro);
      want.rng_commitment = rng_commitment(seeds);
      compare_step(want, f);  // the model's outputs are equal by construction here
    }
    return fmt::format(
        "{} steps: batch hashes, RNG commitments and hyperparameters as the "
        "committed schedule and config give them",
        t.steps.size());
  });

  // Segments: from the initialisation to the first checkpoint, then checkpoint to checkpoint.
  std::vector<uint64_t> starts = {0};
  std::map<uint64_t, Digest> states;
  std::map<uint64_t, std::string> paths;
  for (auto& c : t.checkpoints) {
    states[c.fields.step] = c.fields.state_hash;
    paths[c.fields.step] = c.fields.path;
    if (c.fields.step > starts.back() && c.fields.step < lr.valid_steps)
      starts.push_back(c.fields.step);
  }
  out.segments = starts.size();
  set_compute_threads(int(rc.train.threads));
  model::GPT model(rc.model);
  OptimizerState opt;
  auto load_state = [&](uint64_t step) {
    if (step == 0) {
      model.init_weights(init_seed(rc.train.seed));
      opt = OptimizerState::zeros(model.num_params());
      return;
    }
    const fs::path file = o.run / paths.at(step);
    if (!fs::exists(file))
      mismatch(fmt::format("checkpoint {} (after step {}) is missing", file.string(), step));
    Checkpoint c = load_checkpoint(file);  // verifies the file's own hash
    if (c.info.state_hash != states.at(step))
      mismatch(fmt::format("checkpoint {} has state hash {}, the log committed {}", file.string(),
                           to_hex(c.info.state_hash).substr(0, 16),
                           to_hex(states.at(step)).substr(0, 16)));
    model.flat_params().copy_(c.params);
    opt = {c.m, c.v, c.info.step};
  };

  stage("challenges", [&] {
    // Randomness the trainer could not know when it signed: the verifier's seed, or a hash of
    // the signed head (Fiat–Shamir).
    uint64_t seed = 0;
    if (o.seed) {
      seed = *o.seed;
      out.challenge_source = fmt::format("verifier seed {}", seed);
    } else {
      const Digest head = t.signatures.back().head;
      seed =
          digest_prefix_u64(Sha256().update("wit-challenge-v1").update(head.data(), 32).finish());
      out.challenge_source = "fiat-shamir from signed head " + to_hex(head).substr(0, 16);
    }
    // c independent uniform draws (with replacement, so that a fraction f of bad segments is
    // missed with probability exactly (1 - f)^c); each drawn segment is replayed once.
    std::mt19937_64 rng(seed);
    std::set<uint64_t> drawn;
    for (int64_t i = 0; i < o.challenges; ++i) drawn.insert(rng() % starts.size());
    out.draws = o.challenges;
    const std::vector<uint64_t> order(drawn.begin(), drawn.end());
    std::map<uint64_t, const ProbeRow*> probes;
    for (auto& p : t.probes) probes[p.fields.step] = &p;
    std::map<uint64_t, const EvalRow*> evals;
    for (auto& e : t.evals)
      if (e.fields.split == "val" && e.fields.metric == "loss") evals[e.fields.step] = &e;
    const MicroBatch probe_batch = to_micro_batch(
        eval_batch_tokens(dataset->val(), rc.data.seq_len, rc.witness.probe_sequences, 0),
        rc.witness.probe_sequences, rc.data.seq_len);
    GradientPool pool(model.num_params());
    const StepContext ctx{&*batches, rc.optim, rc.train.steps, rc.train.seed, nullptr};
    uint64_t replayed = 0;
    for (uint64_t k : order) {
      const uint64_t first = starts[k];
      const uint64_t end = k + 1 < starts.size() ? starts[k + 1] : lr.valid_steps;
      out.challenged.push_back(first);
      progress(fmt::format("  replaying steps {} to {}", first, end - 1));
      load_state(first);
      for (uint64_t s = first; s < end; ++s) {
        const StepRecord rec = train_step(model, opt, ctx, pool);
        compare_step(step_fields(rec), t.steps[s].fields);
        ++replayed;
        if (auto p = probes.find(s + 1); p != probes.end()) {
          torch::NoGradGuard no_grad;
          const ProbeFields got =
              probe_outputs(model.logits(probe_batch.x), probe_batch.y, int64_t(s + 1));
          if (std::memcmp(got.mean_logprob.data(), p->second->fields.mean_logprob.data(),
                          4 * got.mean_logprob.size()) != 0 ||
              got.argmax_digest != p->second->fields.argmax_digest)
            mismatch(
                fmt::format("fingerprint after step {}: the model's outputs on the probe "
                            "batch differ from the log's",
                            s));
        }
        if (auto e = evals.find(s + 1); e != evals.end()) {
          const float v = evaluate(model, dataset->val(), rc.data.seq_len,
                                   rc.train.micro_batch_size, rc.train.eval_batches);
          if (std::memcmp(&v, &e->second->fields.value, 4) != 0)
            mismatch(fmt::format("eval after step {}, field value: recomputed {}, the log says {}",
                                 s + 1, bits(v), bits(e->second->fields.value)));
        }
      }
      if (auto st = states.find(end); st != states.end()) {
        const Digest h = state_hash(int64_t(end), model.flat_params(), opt.m, opt.v);
        if (h != st->second)
          mismatch(
              fmt::format("checkpoint after step {}: the replayed state hashes to {}, the "
                          "log committed {}",
                          end, to_hex(h).substr(0, 16), to_hex(st->second).substr(0, 16)));
      }
    }
    return fmt::format("{} of {} segments ({} steps) replayed bit for bit ({})", order.size(),
                       starts.size(), replayed, out.challenge_source);
  });

  stage("model", [&] {
    const fs::path published = o.run / "model.safetensors";
    if (!fs::exists(published)) mismatch(published.string() + " is missing");
    const uint64_t last = lr.valid_steps;
    if (!states.count(last)) mismatch(fmt::format("no checkpoint after the last step {}", last));
    load_state(last);
    const fs::path mine =
        fs::temp_directory_path() / fmt::format("wit-verify-{}-{}.safetensors", ::getpid(), last);
    export_gpt2_safetensors(model, mine,
                            {{"format", "pt"},
                             {"wit.step", std::to_string(last)},
                             {"wit.manifest_root", to_hex(log.meta.manifest_root)}});
    const bool same = read_text_file(mine) == read_text_file(published);
    fs::remove(mine);
    if (!same)
      mismatch(fmt::format("{} is not the export of the checkpoint after step {}",
                           published.string(), last));
    return fmt::format("model.safetensors is exactly the last checkpoint (after step {})", last);
  });

  stage("evaluation", [&] {
    const uint64_t last = lr.valid_steps;
    const EvalRow* final_eval = nullptr;
    for (auto& e : t.evals)
      if (e.fields.step == last && e.fields.split == "val" && e.fields.metric == "loss")
        final_eval = &e;
    if (!final_eval) mismatch("the log has no final val loss");
    const float v = evaluate(model, dataset->val(), rc.data.seq_len, rc.train.micro_batch_size,
                             rc.train.eval_batches);
    if (std::memcmp(&v, &final_eval->fields.value, 4) != 0)
      mismatch(fmt::format("final val loss: recomputed {}, the log says {}", bits(v),
                           bits(final_eval->fields.value)));
    const DataIndex index(dataset->manifest(), RunFacts::from_log(log, lr), data_dir.string());
    size_t held_out = 0;
    for (auto& d : dataset->manifest().documents) {
      if (d.split != data::kSplitVal) continue;
      const Answer a = index.query_id(d.id);
      if (a.verdict != Verdict::HeldOut)
        mismatch(fmt::format("held-out document {} is {}", d.id, verdict_name(a.verdict)));
      ++held_out;
    }
    return fmt::format("final val loss {} recomputed exactly; {} held-out documents excluded",
                       final_eval->fields.value, held_out);
  });

  out.certified = !failed;
  json checks = json::array();
  for (auto& s : out.stages)
    checks.push_back({{"stage", s.name}, {"passed", s.passed}, {"detail", s.detail}});
  json bounds = json::array();
  const int64_t c = out.draws;
  const bool everything = out.challenged.size() == out.segments;  // every step recomputed
  for (double f : {0.01, 0.05, 0.1, 0.25})
    bounds.push_back({{"f", f},
                      {"rejected_with_probability_at_least",
                       everything ? 1.0 : detection_probability(f, c)}});
  out.certificate = {
      {"format", "wit-certificate-v1"},
      {"run", fs::absolute(o.run).filename().string()},
      {"genesis", to_hex(log.genesis)},
      {"head", t.steps.empty() ? to_hex(log.genesis) : to_hex(t.steps.back().hash)},
      {"manifest_root", to_hex(log.meta.manifest_root)},
      {"data_layout", to_hex(log.meta.data_layout)},
      {"trainer_key", to_hex(log.meta.public_key.data(), 32)},
      {"steps", out.steps},
      {"segments", out.segments},
      {"challenged_segments", out.challenged},
      {"challenge_source", out.challenge_source},
      {"checks", checks},
      {"result", out.certified ? "certified" : "rejected"},
      {"guarantee",
       {{"challenges", c},
        {"statement",
         everything ? std::string("every segment was replayed: every step was recomputed")
                    : fmt::format("a run in which at least a fraction f of the steps were not "
                                  "computed as logged is rejected with probability >= "
                                  "1 - (1 - f)^{}",
                                  c)},
        {"bounds", bounds}}},
      {"verified_at", utc_now()},
  };
  return out;
}

json sign_certificate(json certificate, const SigningKey& key) {
  certificate.erase("signature");
  certificate["verifier_key"] = to_hex(key.public_key().data(), 32);
  const Signature s = key.sign("wit-certificate-v1" + certificate.dump());
  certificate["signature"] = to_hex(s.data(), s.size());
  return certificate;
}

std::string check_certificate(const json& c) {
  try {
    if (!c.is_object() || c.value("format", "") != "wit-certificate-v1")
      return "not a wit-certificate-v1 certificate";
    if (!c.contains("signature") || !c.contains("verifier_key"))
      return "the certificate is not signed";
    json body = c;
    body.erase("signature");
    const PublicKey key = load_public_key(c["verifier_key"].get<std::string>());
    const std::string sig_hex = c["signature"].get<std::string>();
    if (sig_hex.size() != 128) return "the signature is not 64 bytes of hex";
    Signature sig{};
    for (size_t i = 0; i < 64; ++i)
      sig[i] = uint8_t(std::stoul(sig_hex.substr(2 * i, 2), nullptr, 16));
    if (!verify_signature(key, "wit-certificate-v1" + body.dump(), sig))
      return "the signature does not match the certificate's contents (a field was changed)";
    return "";
  } catch (const std::exception& e) {
    return std::string("malformed certificate: ") + e.what();
  }
}

}  // namespace wit::witness
