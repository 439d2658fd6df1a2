#include "witness/verify/verify.h"

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

#include "core/error.h"
#include "core/fs.h"
#include "trainer/batch.h"
#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/device_comm.h"
#include "trainer/data/dataset.h"
#include "trainer/data/split.h"
#include "trainer/layout.h"
#include "trainer/run_plan.h"
#include "trainer/run_config.h"
#include "trainer/runtime.h"
#include "trainer/safetensors.h"
#include "trainer/step.h"
#include "trainer/train_loop.h"
#include "trainer/witnessing.h"
#include "witness/log/reader.h"
#include "witness/query/query.h"

namespace wit::witness {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A stage fails at its first mismatch: thrown, caught by the stage runner.
// `outputs`: what differs is a result of computation (loss, weights, evaluations), not an input
// the log commits to (data, hyperparameters, files).
struct Mismatch {
  std::string what;
  bool outputs = false;
};
[[noreturn]] void mismatch(std::string what, bool outputs = false) {
  throw Mismatch{std::move(what), outputs};
}

std::string bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return fmt::format("{} (0x{:08x})", v, u);
}

// A distance between two floats relative to the logged one's size.
double relative(double got, double logged) {
  return std::abs(got - logged) / std::max(std::abs(logged), 1e-12);
}

// The fields a replay must reproduce whatever the hardware: the step's inputs.
void compare_inputs(const StepFields& got, const StepFields& logged) {
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
}

// The first field in which a replayed step differs from the logged one: every bit, or with a
// tolerance, the numeric outputs within it (the weight fingerprint, a hash of exact bits, is
// then left to the checkpoint comparison).
void compare_step(const StepFields& got, const StepFields& logged,
                  const std::optional<double>& tolerance, Distances& seen) {
  compare_inputs(got, logged);
  const uint64_t s = logged.step;
  auto num = [&](const char* name, float a, float b, double* worst) {
    if (tolerance) {
      const double d = relative(a, b);
      if (worst) *worst = std::max(*worst, d);
      if (!(d <= *tolerance))
        mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}: relative "
                             "distance {:.3g} exceeds the tolerance {:.3g}",
                             s, name, a, b, d, *tolerance),
                 true);
      return;
    }
    if (std::memcmp(&a, &b, 4) != 0)
      mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}", s, name, bits(a),
                           bits(b)),
               true);
  };
  num("loss", got.loss, logged.loss, &seen.loss);
  num("grad_norm", got.grad_norm, logged.grad_norm, &seen.grad_norm);
  num("clip_factor", got.clip_factor, logged.clip_factor, nullptr);
  if (!tolerance && got.weight_fingerprint != logged.weight_fingerprint)
    mismatch(fmt::format("step {}, field weight_fingerprint: replay gives {}, the log says {}", s,
                         to_hex(got.weight_fingerprint.data(), 16),
                         to_hex(logged.weight_fingerprint.data(), 16)),
             true);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Rank 0 alone sees some results (evaluations, fingerprints, exports): it tells every rank, so that
// all of them leave the stage at the same point.
// `outputs` as in Mismatch.
void agree_with_root(dist::Communicator& comm, std::string problem, bool outputs = true) {
  uint64_t n = problem.size();
  comm.broadcast(&n, sizeof n, 0);
  problem.resize(n);
  if (n) comm.broadcast(problem.data(), n, 0);
  if (n) mismatch(problem, outputs);
}

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

VerifyReport verify_run(const VerifyOptions& o, dist::Communicator& comm,
                        const Progress& progress_line) {
  using Clock = std::chrono::steady_clock;
  const auto began = Clock::now();
  const bool root = comm.is_root();
  auto progress = [&](const std::string& line) {
    if (root) progress_line(line);
  };
  VerifyReport out;
  out.world = comm.size();
  const fs::path log_file = o.run / kLogFileName;
  if (!fs::exists(log_file))
    fail("{} has no {}: not a run directory of a witnessed run", o.run.string(), kLogFileName);
  if (o.tolerance && !(*o.tolerance >= 0 && std::isfinite(*o.tolerance)))
    fail("--tolerance must be a finite relative distance >= 0, got {}", *o.tolerance);
  const WitnessLog log = read_log(log_file);
  const LogReport lr = check_log(log, o.trusted_key);
  // Every fact the verifier uses comes from the committed config; nothing else in /meta is read.
  if (!lr.config) {
    // Without a committed config there is nothing to replay: the log itself is the lie.
    out.stages.push_back({"structure", false, lr.problems.front().text()});
    out.reason = "structure: " + lr.problems.front().text();
    progress(fmt::format("{:<11} FAILED: {}", "structure", lr.problems.front().text()));
    return out;
  }
  const auto cfg = parse_committed(log.meta.committed_yaml, log_file.string() + ":/meta");
  const RunConfig rc = *lr.config;
  // Where to replay: a GPU run exactly only on the same GPU and libraries (said up front).
  std::string compute_note;
  const Compute compute = replay_compute(log.meta.sessions_json, rc, o.tolerance.has_value(),
                                         comm.size(), &compute_note);
  if (!compute_note.empty()) progress("note: " + compute_note);
  model::GPTConfig replay_model = rc.model;
  replay_model.attention = compute.attention;
  // Gradients on GPUs travel as in training (NCCL, or staged through the host).
  const std::unique_ptr<dist::Communicator> device_comm =
      device_communicator(comm, compute, /*quiet=*/!root);
  // The verifier's layout, with the trainer's rules and messages (world size, M).
  auto layout = make_layout(o.mode, replay_model, rc.train.micro_batches,
                            device_comm ? *device_comm : comm, compute);
  const fs::path data_dir = o.data.empty() ? dataset_hint(log) : o.data;
  if (data_dir.empty())
    fail("{} does not say where its dataset was: give it with --data", log_file.string());
  if (o.data.empty()) {
    // The hint is unsigned: a dataset it points to that is missing or not the committed one is
    // the verifier's problem to solve (--data), never evidence against the trainer.
    const fs::path manifest = data_dir / data::kManifestFile;
    std::string why;
    if (!fs::exists(manifest)) {
      why = "has no " + std::string(data::kManifestFile);
    } else {
      const data::Manifest m = data::read_manifest(manifest);
      if (m.root != log.meta.manifest_root || data::layout_digest(m) != log.meta.data_layout)
        why = "is not the dataset the run committed to";
    }
    if (!why.empty())
      fail("{} (where the log's unsigned session facts say the dataset was) {}: give the run's "
           "dataset with --data",
           data_dir.string(), why);
  }
  const Tables& t = log.tables;
  const std::string nondeterminism = declared_nondeterminism(cfg);
  out.steps = lr.valid_steps;

  bool failed = false;
  auto stage = [&](const char* name, const std::function<std::string()>& body) {
    Stage s{name, false, ""};
    if (failed) {
      s.detail = "not run: an earlier stage failed";
    } else {
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
      // Every rank leaves the stage with the same verdict.
      std::vector<uint8_t> passed(size_t(comm.size()));
      const uint8_t mine = s.passed;
      comm.all_gather_bytes(&mine, 1, passed.data());
      for (int r = 0; r < comm.size() && s.passed; ++r)
        if (!passed[size_t(r)]) {
          s.passed = false;
          s.detail = fmt::format("failed on rank {} of {}", r, comm.size());
        }
      failed = !s.passed;
      progress(fmt::format("{:<11} {} ({:.1f}s): {}", name, s.passed ? "passed" : "FAILED",
                           seconds_since(start), s.detail));
    }
    out.stages.push_back(s);
  };

  // The committed checkpoints, by steps completed. Each file is bound to its row: its header's
  // step, run (genesis) and size, and its content hash (the state hash covers every byte).
  std::map<uint64_t, Digest> states;
  for (auto& c : t.checkpoints) states[c.fields.step] = c.fields.state_hash;
  auto checkpoint_file = [&](uint64_t step) {
    const fs::path file = o.run / checkpoint_file_name(step);
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
    if (info.genesis != log.genesis)
      mismatch(fmt::format("checkpoint {} belongs to another run (genesis {}, the log's is {})",
                           file.string(), to_hex(info.genesis).substr(0, 16),
                           to_hex(log.genesis).substr(0, 16)));
    if (uint64_t(info.num_params) != log.meta.num_params)
      mismatch(fmt::format("checkpoint {} holds {} parameters, the run's model {}", file.string(),
                           info.num_params, log.meta.num_params));
    if (info.state_hash != states.at(step))
      mismatch(fmt::format("checkpoint {} has state hash {}, the log committed {}", file.string(),
                           to_hex(info.state_hash).substr(0, 16),
                           to_hex(states.at(step)).substr(0, 16)));
    return file;
  };

  // The availability draws' randomness: the challenges' source, under its own label. Drawn here,
  // by every rank (a fresh draw is broadcast), before any stage can fail on one rank alone.
  const Digest availability_key =
      o.source == ChallengeSource::FiatShamir && !lr.signed_heads
          ? Digest{}  // the structure stage rejects a log without a signed head first
          : Sha256()
                .update("wit-availability-v1")
                .update(challenge_key(o, lr, comm).data(), 32)
                .finish();
  std::optional<data::Dataset> dataset;
  stage("structure", [&] {
    if (!lr.ok()) mismatch(lr.problems.front().text());
    if (!lr.complete)
      mismatch(fmt::format("the run is not complete: {} of {} steps recorded", lr.valid_steps,
                           rc.train.steps));
    dataset.emplace(data::Dataset::open(data_dir));
    if (dataset->manifest().root != log.meta.manifest_root)
      mismatch(fmt::format("dataset {} has root {}, the run committed to {}", data_dir.string(),
                           to_hex(dataset->manifest().root), to_hex(log.meta.manifest_root)));
    if (data::layout_digest(dataset->manifest()) != log.meta.data_layout)
      mismatch(fmt::format("dataset {} lays its documents out differently from the run's",
                           data_dir.string()));
    dataset->verify_shard_hashes();
    // Every checkpoint present at its committed size with a leaf table that hashes to its
    // committed state hash, and a few of its leaves (drawn after the run was received) hashed:
    // checkpoints are what later challenges start from, so a run must keep them all; reading
    // each whole would cost as much as the run's state times its checkpoints, whatever is
    // challenged. Checkpoints a replay loads are hashed whole when loaded. The ranks share this.
    size_t i = 0;
    uint64_t bytes = 0;
    const uint64_t L = checkpoint_leaf_count(int64_t(log.meta.num_params));
    const uint64_t per = std::min(L, uint64_t(std::max<int64_t>(o.checkpoint_leaves, 0)));
    for (auto& [step, hash] : states) {
      const fs::path file = checkpoint_file(step);
      if (i++ % size_t(comm.size()) != size_t(comm.rank())) continue;
      try {
        if (o.whole_checkpoints) {
          verify_checkpoint(file);
          bytes += fs::file_size(file);
          continue;
        }
        bytes += verify_checkpoint_leaves(file, sample_leaves(availability_key, step, L, per));
      } catch (const Error& e) {
        mismatch(e.what());
      }
    }
    out.cost.checkpoint_bytes_checked = bytes;
    out.availability = {int64_t(states.size()), int64_t(per), int64_t(L), o.whole_checkpoints};
    const std::string how =
        o.whole_checkpoints
            ? std::string("read and hashed whole")
            : fmt::format("present, their leaf tables matching the committed state hashes, {} "
                          "leaves of each hashed",
                          per);
    return fmt::format(
        "{} steps chained, {} signatures valid (key {}), {} checkpoints {}, dataset {} and its {} "
        "shards match",
        lr.valid_steps, lr.signatures_valid, key_id(log.meta.public_key), states.size(), how,
        to_hex(log.meta.manifest_root).substr(0, 16), dataset->manifest().shards.size());
  });

  std::optional<RunPlan> plan;
  stage("data", [&] {
    const auto start = Clock::now();
    plan.emplace(rc, *dataset);
    for (auto& row : t.steps) {
      const StepFields& f = row.fields;
      // Only the inputs are compared here; the outputs are the replay's to check.
      compare_inputs(step_fields(committed_inputs(plan->context(), int64_t(f.step))), f);
    }
    out.cost.audit_seconds = seconds_since(start);
    return fmt::format(
        "{} steps: batch hashes, RNG commitments and hyperparameters as the "
        "committed schedule and config give them",
        t.steps.size());
  });

  // Segments [first, end): aligned blocks of K steps, K = --segment or train.checkpoint_every,
  // the last one possibly shorter. Every block boundary is a checkpoint, so a replayed segment
  // starts from a committed state and ends on one it must reproduce exactly: a step whose
  // outputs differ from the log spoils its own segment.
  const uint64_t n = lr.valid_steps;
  const uint64_t every = uint64_t(rc.train.checkpoint_every);
  uint64_t K = every > 0 ? every : n;
  if (o.segment > 0) {
    K = uint64_t(o.segment);
    if (every == 0 ? K < n : K % every != 0)
      fail("--segment {}: segments must end at checkpoints, so K must be a multiple of "
           "train.checkpoint_every = {}{}",
           o.segment, every, every == 0 ? " (0: the run's only checkpoint is its last step)" : "");
  }
  K = std::min(K, n);
  std::vector<std::pair<uint64_t, uint64_t>> segments;
  for (uint64_t s = 0; s < n; s += K) segments.push_back({s, std::min(s + K, n)});
  out.segments = segments.size();
  set_compute_threads(int(rc.train.threads));
  auto load_state = [&](uint64_t step) {
    if (step == 0) return layout->init(init_seed(rc.train.seed));
    const auto start = Clock::now();
    layout->load(checkpoint_file(step));  // the load checks the file against its state hash
    out.cost.loads += 1;
    out.cost.load_seconds += seconds_since(start);
  };

  // The behavioural fingerprint of the layout's current state against a logged one (collective).
  std::map<uint64_t, const FingerprintRow*> fingerprints;
  for (auto& p : t.fingerprints) fingerprints[p.fields.step] = &p;
  auto check_fingerprint = [&](const FingerprintRow& row) {
    const FingerprintFields got = layout->fingerprint(plan->probe_batch());
    const auto& logged = row.fields;
    const uint64_t s = logged.step;
    std::string problem;
    if (root && o.tolerance) {
      double worst = 0;
      for (size_t i = 0; i < got.mean_logprob.size(); ++i)
        worst = std::max(worst, double(std::abs(got.mean_logprob[i] - logged.mean_logprob.at(i))));
      out.distances.probe_logprob = std::max(out.distances.probe_logprob, worst);
      if (!(worst <= *o.tolerance))
        problem = fmt::format(
            "fingerprint after step {}, field mean_logprob: distance {:.3g} exceeds the "
            "tolerance {:.3g}",
            s, worst, *o.tolerance);
    } else if (root && (got.mean_logprob != logged.mean_logprob ||
                        got.argmax_digest != logged.argmax_digest)) {
      problem = fmt::format(
          "fingerprint after step {}: the model's outputs on the probe batch differ from the "
          "log's",
          s);
    }
    agree_with_root(comm, problem);
  };

  // A logged val loss recomputed from the layout's current state (collective); each is
  // recomputed once, the final one included.
  std::set<uint64_t> evals_checked;
  auto check_eval = [&](const EvalRow& row) {
    const uint64_t step = row.fields.step;
    if (evals_checked.count(step)) return;
    const float v = layout->evaluate(dataset->val(), rc.data.seq_len, rc.train.micro_batch_size,
                                     rc.train.eval_batches);
    const float logged = row.fields.value;
    std::string problem;
    if (root && o.tolerance) {
      out.distances.eval = std::max(out.distances.eval, relative(v, logged));
      if (!(relative(v, logged) <= *o.tolerance))
        problem = fmt::format(
            "eval after step {}, field value: recomputed {}, the log says {}: relative distance "
            "{:.3g} exceeds the tolerance {:.3g}",
            step, v, logged, relative(v, logged), *o.tolerance);
    } else if (root && std::memcmp(&v, &logged, 4) != 0) {
      problem = fmt::format("eval after step {}, field value: recomputed {}, the log says {}", step,
                            bits(v), bits(logged));
    }
    agree_with_root(comm, problem);
    evals_checked.insert(step);
  };

  stage("challenges", [&] {
    // The first and the last segment always: the initialisation from the committed seed, and
    // the state the published model is exported from. Then c draws, uniform with replacement,
    // over the segments between them, all of exactly K steps: if a fraction f of all steps is
    // bad and none is in the first or last segment, at least a fraction f of the middle
    // segments is bad, and c draws miss them all with probability at most (1 - f)^c.
    std::set<uint64_t> replay;
    const uint64_t middle = segments.size() > 2 ? segments.size() - 2 : 0;
    if (o.segments) {
      for (uint64_t k : *o.segments) {
        if (k >= segments.size())
          fail("segment {} was assigned, but the run has {} segments of {} steps", k,
               segments.size(), K);
        replay.insert(k);
      }
      out.challenge_source = "assigned";
      if (replay.empty()) return std::string("no segment assigned");
      if (const auto p = o.probe_after_step) {
        bool inside = false;
        for (uint64_t k : replay) inside |= segments[k].first < *p && *p < segments[k].second;
        if (!inside)
          fail("the state after step {} was asked for, which is inside no assigned segment", *p);
      }
    } else {
      const Digest key = challenge_key(o, lr, comm);
      out.challenge_source = challenge_source_text(o, lr);
      replay = {0, segments.size() - 1};
      out.always_replayed = {segments.front().first, segments.back().first};
      out.draws = middle > 0 ? o.challenges : 0;
      for (uint64_t k : draw_segments(key, out.draws, segments.size())) {
        out.drawn.push_back(segments[k].first);
        replay.insert(k);
      }
    }
    const std::vector<uint64_t> order(replay.begin(), replay.end());
    std::map<uint64_t, const EvalRow*> evals;
    for (auto& e : t.evals)
      if (e.fields.split == "val" && e.fields.metric == "loss") evals[e.fields.step] = &e;
    Distances& seen = out.distances;
    // A checkpoint the replay passes: its committed state must be the replayed one.
    auto check_checkpoint = [&](uint64_t step) {
      if (o.tolerance) {
        // Other hardware: the replayed weights against the committed checkpoint's.
        const torch::Tensor mine = layout->full_params();
        std::string problem;
        if (root) {
          const Checkpoint c = load_checkpoint_weights(checkpoint_file(step));
          const double d = (mine - c.params).norm().item<double>() /
                           std::max(c.params.norm().item<double>(), 1e-30);
          seen.weights = std::max(seen.weights, d);
          if (!(d <= *o.tolerance))
            problem = fmt::format(
                "checkpoint after step {}: the replayed weights are at relative L2 distance "
                "{:.3g} from the committed ones, beyond the tolerance {:.3g}",
                step, d, *o.tolerance);
        }
        agree_with_root(comm, problem);
      } else {
        // In the formula of the committed file's version (runs from older builds hold version 2).
        const uint32_t version = read_checkpoint_info(checkpoint_file(step)).version;
        const Digest h = layout->state_hash(log.genesis, version);  // collective; rank 0 has it
        agree_with_root(
            comm,
            root && h != states.at(step)
                ? fmt::format("checkpoint after step {}: the replayed state hashes to {}, "
                              "the log committed {}",
                              step, to_hex(h).substr(0, 16), to_hex(states.at(step)).substr(0, 16))
                : "");
      }
    };
    // The plan, priced before anything is replayed: the steps to run (from the checkpoint
    // before each segment) and what the trainer's own step times for them add up to.
    uint64_t planned = 0, replayed = 0;
    double logged = 0;
    {
      bool loaded = false;
      uint64_t at = 0;
      for (uint64_t k : order) {
        const auto [first, end] = segments[k];
        const auto after = states.upper_bound(first);
        const uint64_t from = after == states.begin() ? 0 : std::prev(after)->first;
        if (!(loaded && !o.tolerance && at >= from && at <= first)) at = from;
        loaded = true;
        for (uint64_t s = at; s < end; ++s) logged += t.steps[s].timing.seconds;
        planned += end - at;
        at = end;
      }
    }
    progress(fmt::format("  plan: {} steps to replay ({} % of the run's {}) in {} segment(s); the "
                         "trainer's step times for them add up to {}",
                         planned, planned * 100 / std::max<uint64_t>(t.steps.size(), 1),
                         t.steps.size(), order.size(), format_duration(logged)));
    const auto replay_start = Clock::now();
    auto last_line = replay_start;
    bool have_state = false;
    for (uint64_t k : order) {
      const auto [first, end] = segments[k];
      out.challenged.push_back(first);
      // Start from the last checkpoint at or before the segment, or, in exact mode, go on from
      // where the previous segment's replay stopped when that is on the way (it was checked).
      const auto after = states.upper_bound(first);
      const uint64_t from = after == states.begin() ? 0 : std::prev(after)->first;
      const uint64_t at = uint64_t(layout->steps_done());
      if (!(have_state && !o.tolerance && at >= from && at <= first)) load_state(from);
      have_state = true;
      const uint64_t cur = uint64_t(layout->steps_done());
      progress(cur == first
                   ? fmt::format("  replaying steps {} to {}", first, end - 1)
                   : fmt::format("  replaying steps {} to {} (from step {})", first, end - 1, cur));
      for (uint64_t s = cur; s < end; ++s) {
        const auto start = Clock::now();
        const StepRecord rec = train_step(*layout, plan->context());
        out.cost.replay_seconds += seconds_since(start);
        out.cost.logged_seconds += t.steps[s].timing.seconds;
        out.cost.replayed_steps += 1;
        compare_step(step_fields(rec), t.steps[s].fields, o.tolerance, seen);
        if (auto p = fingerprints.find(s + 1); p != fingerprints.end()) check_fingerprint(*p->second);
        if (auto e = evals.find(s + 1); e != evals.end()) check_eval(*e->second);
        if (states.count(s + 1)) check_checkpoint(s + 1);
        if (o.probe_after_step == s + 1) {
          const Digest h = layout->state_hash(log.genesis);  // collective; rank 0 has it
          if (root) out.probe_state = h;
        }
        // A line every 10 s at most, with the ETA from this replay's own pace.
        ++replayed;
        if (seconds_since(last_line) >= 10 && replayed < planned) {
          last_line = Clock::now();
          const double spent = seconds_since(replay_start);
          progress(fmt::format("    step {}: {} of {} steps replayed, ETA {}", s + 1, replayed,
                               planned, format_duration(spent / double(replayed) *
                                                        double(planned - replayed))));
        }
      }
    }
    if (o.segments)
      return fmt::format("segment(s) {} of {} (steps {} to {}) replayed {} on {} process(es)",
                         fmt::join(order, ", "), segments.size(), segments[order.front()].first,
                         segments[order.back()].second - 1,
                         o.tolerance ? fmt::format("within tolerance {:.3g}", *o.tolerance)
                                     : std::string("bit for bit"),
                         comm.size());
    return fmt::format(
        "{} of {} segments ({} steps) replayed {} on {} process(es): the first and the last, "
        "and {} draw(s) from the {} between them ({})",
        order.size(), segments.size(), out.cost.replayed_steps,
                       o.tolerance ? fmt::format("within tolerance {:.3g}", *o.tolerance)
                                   : std::string("bit for bit"),
        comm.size(), out.draws, middle, out.challenge_source);
  });
  // A run that declares a nondeterministic setting and differs on replay only in the step's
  // outputs is an honest run that cannot be checked, not a proven lie: the checks that need no
  // replay still run, and the verdict is "not reproducible".
  bool excused = false;
  if (!o.tolerance && !nondeterminism.empty() && failed && out.stages.back().outputs_differ) {
    failed = false;
    excused = true;
    out.reason = fmt::format("{}; replay differs at {}", nondeterminism, out.stages.back().detail);
  }

  if (o.final_checks) stage("model", [&] {
    const fs::path published = o.run / "model.safetensors";
    if (!fs::exists(published)) mismatch(published.string() + " is missing");
    const uint64_t last = lr.valid_steps;
    if (!states.count(last)) mismatch(fmt::format("no checkpoint after the last step {}", last));
    load_state(last);
    const fs::path mine =
        fs::temp_directory_path() / fmt::format("wit-verify-{}-{}.safetensors", ::getpid(), last);
    layout->export_model(mine, {{"format", "pt"},
                                {"wit.step", std::to_string(last)},
                                {"wit.manifest_root", to_hex(log.meta.manifest_root)}});
    std::string problem;
    if (root) {
      const std::string bytes = read_text_file(published);
      out.model_sha256 = sha256(bytes);
      const bool same = read_text_file(mine) == bytes;
      fs::remove(mine);
      if (!same)
        problem = fmt::format("{} is not the export of the checkpoint after step {}",
                              published.string(), last);
    }
    agree_with_root(comm, problem, false);
    // The last checkpoint is the model the log's last fingerprints describe.
    const Fingerprint w = layout->weight_fingerprint();  // exact bits: any hardware agrees
    if (last > 0 && w != t.steps[last - 1].fields.weight_fingerprint)
      mismatch(
          fmt::format("the last checkpoint's weight fingerprint {} is not the one logged "
                      "after step {}",
                      to_hex(w.data(), w.size()), last - 1));
    if (auto p = fingerprints.find(last); p != fingerprints.end()) check_fingerprint(*p->second);
    return fmt::format(
        "model.safetensors is exactly the last checkpoint (after step {}), whose weight and "
        "behavioural fingerprints are the logged ones",
        last);
  });

  if (o.final_checks) stage("evaluation", [&] {
    const uint64_t last = lr.valid_steps;
    const EvalRow* final_eval = nullptr;
    for (auto& e : t.evals)
      if (e.fields.step == last && e.fields.split == "val" && e.fields.metric == "loss")
        final_eval = &e;
    if (!final_eval) mismatch("the log has no final val loss");
    check_eval(*final_eval);
    const DataIndex index(dataset->manifest(), RunFacts::from_log(log, lr), data_dir.string());
    size_t held_out = 0;
    for (auto& d : dataset->manifest().documents) {
      if (d.split != data::kSplitVal) continue;
      const Answer a = index.query_id(d.id);
      if (a.verdict != Verdict::HeldOut)
        mismatch(fmt::format("held-out document {} is {}", d.id, verdict_name(a.verdict)));
      ++held_out;
    }
    return fmt::format("final val loss {} recomputed {}; {} held-out documents excluded",
                       final_eval->fields.value, o.tolerance ? "within tolerance" : "exactly",
                       held_out);
  });
  out.cost.total_seconds = seconds_since(began);
  // Distances are seen on rank 0: every rank reports them.
  comm.broadcast(&out.distances, sizeof out.distances, 0);

  if (failed) {
    out.outcome = Outcome::Rejected;
    for (auto& st : out.stages)
      if (!st.passed && !(excused && st.name == "challenges")) {
        out.reason = st.name + ": " + st.detail;
        break;
      }
  } else if (o.tolerance) {
    // Tolerance mode asks for closeness, not equal bits: a declared nondeterminism is no excuse
    // and no obstacle.
    out.outcome = Outcome::ConsistentWithinTolerance;
    out.reason =
        fmt::format("replayed within relative tolerance {:.3g}, not bit for bit", *o.tolerance);
  } else if (!nondeterminism.empty()) {
    out.outcome = Outcome::NotReproducible;
    if (out.reason.empty())
      out.reason = nondeterminism +
                   "; the challenged segments happened to replay exactly, but the unchallenged "
                   "ones need not, so the run cannot be certified";
  } else {
    out.outcome = Outcome::Certified;
  }
  out.certified = out.outcome == Outcome::Certified;
  if (o.segments || !o.final_checks ||
      (out.outcome != Outcome::Certified && out.outcome != Outcome::ConsistentWithinTolerance))
    return out;

  json checks = json::array();
  for (auto& st : out.stages)
    checks.push_back({{"stage", st.name}, {"passed", st.passed}, {"detail", st.detail}});
  const int64_t c = out.draws;
  const bool everything = out.challenged.size() == out.segments;  // every step recomputed
  const bool fiat_shamir = o.source == ChallengeSource::FiatShamir;
  json bounds = json::array();
  for (double f : {0.01, 0.05, 0.1, 0.25}) {
    json b = {{"f", f},
              {"rejected_with_probability_at_least",
               everything    ? 1.0
               : fiat_shamir ? fiat_shamir_bound(f, c, o.grinding_bits)
                             : detection_probability(f, c)}};
    if (fiat_shamir && !everything) b["if_the_trainer_did_not_retry"] = detection_probability(f, c);
    bounds.push_back(b);
  }
  const std::string computed =
      o.tolerance ? "computed as logged (within the tolerance)" : "computed as logged";
  std::string statement;
  if (everything) {
    statement = fmt::format("every segment was replayed: every step was {}", computed);
  } else {
    statement = fmt::format(
        "the first and the last segment were replayed, and {} segments drawn uniformly from the "
        "other {}: a run in which at least a fraction f of the steps were not {} is rejected "
        "with probability >= 1 - (1 - f)^{}",
        c, out.segments - 2, computed, c);
    if (fiat_shamir)
      statement += fmt::format(
          ", but only against a trainer who did not retry: the challenges follow from the "
          "signed head, which the trainer can vary and re-sign at will; against one who tries "
          "up to 2^{} logs the bound is 1 - 2^{} (1 - f)^{}, and 0 (no guarantee) where that is "
          "negative",
          o.grinding_bits, o.grinding_bits, c);
  }
  const Heads& head = *lr.signed_heads;
  json source = {{"kind", challenge_kind_name(o.source)}, {"detail", out.challenge_source}};
  if (o.source == ChallengeSource::VerifierSeed) source["seed"] = o.seed;
  if (fiat_shamir) source["grinding_budget_bits"] = o.grinding_bits;
  out.certificate = {
      {"format", kCertificateFormat},
      {"run", fs::absolute(o.run).filename().string()},
      {"model_sha256", to_hex(out.model_sha256)},
      {"steps", out.steps},
      {"segments", out.segments},
      {"segment_steps", K},
      {"always_replayed_segments", out.always_replayed},
      {"drawn_segments", out.drawn},
      {"challenged_segments", out.challenged},
      {"challenge_source", source},
      {"replayed_on", fmt::format("{} process(es), layout {}", comm.size(), o.mode)},
      {"checks", checks},
      {"result", outcome_name(out.outcome)},
      {"guarantee", {{"challenges", c}, {"statement", statement}, {"bounds", bounds}}},
      {"verified_at", utc_now()},
  };
  {
    // What the certificate may say of the checkpoints nobody loaded: what the structure stage
    // showed, and no more.
    const Availability& a = out.availability;
    json checkpoints = {
        {"committed", a.checkpoints},
        {"leaf_bytes", checkpoint_leaf_bytes(int64_t(log.meta.num_params))},
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
                      a.checkpoints, a.leaves_per_checkpoint, checkpoint_leaf_bytes(int64_t(log.meta.num_params)),
                      a.leaves_per_checkpoint,
                      fiat_shamir ? " against a trainer who did not retry" : "");
    out.certificate["checkpoints"] = checkpoints;
  }
  out.certificate.update(run_identity(log, head, states.at(lr.valid_steps)));
  if (o.tolerance)
    out.certificate["tolerance"] = {{"relative", *o.tolerance},
                                    {"observed",
                                     {{"loss", out.distances.loss},
                                      {"grad_norm", out.distances.grad_norm},
                                      {"probe_logprob", out.distances.probe_logprob},
                                      {"eval", out.distances.eval},
                                      {"weights", out.distances.weights}}}};
  return out;
}

}  // namespace wit::witness
