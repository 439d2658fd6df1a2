// The witness log tests' run: a writer's rows for an 8-step run, and the log it leaves, for tests
// to read back, tamper with, crash and resume.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/reader.h"
#include "record/run_config.h"
#include "record/writer.h"
#include "tests/data/temp_dir.h"

namespace wit::witness::log_testing {

using wit::testing::TempDir;

constexpr uint64_t kSteps = 8;
constexpr uint64_t kProbe = 3;

// The committed config of the run record() writes: 8 steps, a fingerprint of 3 sequences every
// 2 steps, an eval and a checkpoint every 4.
inline std::string committed(uint64_t total = kSteps,
                             const std::vector<std::string>& extra = {}) {
  std::vector<std::string> keys = {"train.steps=" + std::to_string(total),
                                   "witness.fingerprint_every=2",
                                   "witness.probe_sequences=" + std::to_string(kProbe),
                                   "train.eval_every=4",
                                   "train.checkpoint_every=4",
                                   "model.n_layer=2"};
  keys.insert(keys.end(), extra.begin(), extra.end());
  return committed_yaml(config::Config::parse("", "test", run_schema(), keys));
}

inline RunMeta test_meta(const SigningKey& key, uint64_t total = kSteps) {
  RunMeta m;
  m.committed_yaml = committed(total);
  m.manifest_root = sha256("dataset");
  m.data_layout = sha256("layout");
  m.num_params = 1234;
  m.public_key = key.public_key();
  m.sessions_json = R"([{"world_size": 1}])";
  m.created = "2026-12-02T00:00:00Z";
  return m;
}

// Deterministic, distinct fields for step i.
inline StepFields step_fields(uint64_t i) {
  StepFields f;
  f.step = i;
  f.tokens = 128;
  f.lr = 1e-3f * float(i + 1);
  f.weight_decay = 0.1f;
  f.beta1 = 0.9f;
  f.beta2 = 0.95f;
  f.eps = 1e-8f;
  f.grad_clip = 1.0f;
  f.loss = 5.0f - 0.1f * float(i);
  f.grad_norm = 0.5f + float(i);
  f.clip_factor = 1.0f;
  f.batch_hash = sha256("batch " + std::to_string(i));
  f.rng_commitment = sha256("rng " + std::to_string(i));
  const Digest w = sha256("weights " + std::to_string(i));
  std::copy(w.begin(), w.begin() + 16, f.weight_fingerprint.begin());
  return f;
}

inline FingerprintFields probe_fields(uint64_t step) {
  return {step, {-1.0f * float(step), -2.0f, -3.0f}, sha256("argmax " + std::to_string(step))};
}

// The run a trainer would record: steps, a fingerprint every 2, a checkpoint and signature every
// 4, an eval at 4 and at the end; steps [0, until).
inline void record(LogWriter& w, uint64_t from, uint64_t until) {
  for (uint64_t i = from; i < until; ++i) {
    w.append_step(step_fields(i), {1e9 + double(i), 0.5});
    const uint64_t done = i + 1;
    if (done % 2 == 0) w.append_fingerprint(probe_fields(done));
    if (done % 4 == 0) {
      w.append_eval({done, "val", "loss", 4.0f - 0.01f * float(done)});
      w.append_checkpoint({done, sha256("state " + std::to_string(done))});
      w.sign();
    }
  }
}

struct LogRun {
  TempDir dir;
  SigningKey key = SigningKey::generate();
  std::filesystem::path file = dir / "witness.h5";
  void write(uint64_t steps = kSteps) {
    LogWriter w = LogWriter::create(file, test_meta(key), SigningKey::load(save_key()));
    record(w, 0, steps);
    w.sign();
  }
  std::filesystem::path save_key() {
    auto p = dir / "key.pem";
    if (!std::filesystem::exists(p)) key.save(p);
    return p;
  }
  LogReport check(const std::optional<PublicKey>& trusted = {}) {
    return check_log(read_log(file), trusted);
  }
};

inline int sessions_in(const std::string& json) { return int(nlohmann::json::parse(json).size()); }

inline std::string first_problem(const LogReport& r) {
  return r.problems.empty() ? std::string("(no problem)") : r.problems.front().text();
}

}  // namespace wit::witness::log_testing
