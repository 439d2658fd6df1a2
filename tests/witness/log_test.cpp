// The witness log: round trip, chain verification, each kind of tampering detected, crash and
// resume. Tampering edits the HDF5 file in place, as an attacker with the file would.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/h5.h"
#include "tests/data/temp_dir.h"
#include "record/reader.h"
#include "record/run_config.h"
#include "record/writer.h"

namespace wit::witness {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

constexpr uint64_t kSteps = 8;
constexpr uint64_t kProbe = 3;

// The committed config of the run record() writes: 8 steps, a fingerprint of 3 sequences every
// 2 steps, an eval and a checkpoint every 4.
std::string committed(uint64_t total = kSteps, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> keys = {"train.steps=" + std::to_string(total),
                                   "witness.fingerprint_every=2",
                                   "witness.probe_sequences=" + std::to_string(kProbe),
                                   "train.eval_every=4",
                                   "train.checkpoint_every=4",
                                   "model.n_layer=2"};
  keys.insert(keys.end(), extra.begin(), extra.end());
  return committed_yaml(config::Config::parse("", "test", run_schema(), keys));
}

RunMeta test_meta(const SigningKey& key, uint64_t total = kSteps) {
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
StepFields step_fields(uint64_t i) {
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

FingerprintFields probe_fields(uint64_t step) {
  return {step, {-1.0f * float(step), -2.0f, -3.0f}, sha256("argmax " + std::to_string(step))};
}

// The run a trainer would record: steps, a fingerprint every 2, a checkpoint and signature every
// 4, an eval at 4 and at the end; steps [0, until).
void record(LogWriter& w, uint64_t from, uint64_t until) {
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

int sessions_in(const std::string& json) { return int(nlohmann::json::parse(json).size()); }

std::string first_problem(const LogReport& r) {
  return r.problems.empty() ? std::string("(no problem)") : r.problems.front().text();
}

// model.vocab_pad rounds the table up (GPT-2's 50257 to 50304 with 64) and is part of the
// committed config only when set, so configs without it commit what they always did.
TEST(RunConfig, VocabPadRoundsTheTableUpAndIsCommittedOnlyWhenSet) {
  auto parse = [](std::vector<std::string> sets) {
    sets.push_back("model.vocab_size=50257");
    return config::Config::parse("", "test", run_schema(), sets);
  };
  const auto plain = parse({});
  EXPECT_EQ(run_config_from(plain).model.vocab_size, 50257);
  EXPECT_EQ(committed_yaml(plain).find("vocab_pad"), std::string::npos);
  const auto padded = parse({"model.vocab_pad=64"});
  EXPECT_EQ(run_config_from(padded).model.vocab_size, 50304);
  const std::string yaml = committed_yaml(padded);
  EXPECT_NE(yaml.find("vocab_pad: 64"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("vocab_size: 50257"), std::string::npos) << yaml;
  EXPECT_EQ(run_config_from(parse_committed(yaml, "test")).model.vocab_size, 50304);
  EXPECT_TRUE(contains(error_of([&] {
                         run_config_from(config::Config::parse(
                             "", "test", run_schema(),
                             {"model.vocab_size=65535", "model.vocab_pad=1000"}));
                       }),
                       "over 65536"));
}

TEST(WitnessLog, RoundTrip) {
  LogRun run;
  run.write();
  WitnessLog log = read_log(run.file);
  ASSERT_EQ(log.tables.steps.size(), kSteps);
  for (uint64_t i = 0; i < kSteps; ++i) {
    const StepFields want = step_fields(i), &got = log.tables.steps[i].fields;
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(std::memcmp(&got.loss, &want.loss, 4), 0);
    EXPECT_EQ(got.lr, want.lr);
    EXPECT_EQ(got.batch_hash, want.batch_hash);
    EXPECT_EQ(got.weight_fingerprint, want.weight_fingerprint);
    EXPECT_EQ(log.tables.steps[i].timing.wall_time, 1e9 + double(i));
  }
  ASSERT_EQ(log.tables.fingerprints.size(), 4u);
  EXPECT_EQ(log.tables.fingerprints[1].fields.mean_logprob, probe_fields(4).mean_logprob);
  ASSERT_EQ(log.tables.checkpoints.size(), 2u);
  EXPECT_EQ(log.tables.checkpoints[1].fields.step, 8u);
  ASSERT_EQ(log.tables.evals.size(), 2u);
  EXPECT_EQ(log.tables.evals[0].fields.split, "val");
  EXPECT_EQ(log.tables.evals[0].fields.metric, "loss");
  EXPECT_EQ(log.meta.num_params, 1234u);
  EXPECT_EQ(log.meta.public_key, run.key.public_key());
  EXPECT_EQ(log.genesis, test_meta(run.key).genesis());

  const LogReport r = check_log(log, run.key.public_key());
  EXPECT_TRUE(r.ok()) << first_problem(r);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.valid_steps, kSteps);
  EXPECT_EQ(r.signed_steps, kSteps);
  EXPECT_EQ(r.signatures_valid, 3u);  // the genesis, then at steps 4 and 8
}

TEST(WitnessLog, RecordHashesDependOnlyOnTheRunAndItsKey) {
  // Two logs of the same steps by the same key, written at different times: the same chain. The
  // genesis names the key, so a log of the same steps under another key is another chain.
  LogRun a, b, other;
  b.key = SigningKey::load(a.save_key());
  a.write();
  b.write();
  other.write();
  auto la = read_log(a.file), lb = read_log(b.file), lo = read_log(other.file);
  for (uint64_t i = 0; i < kSteps; ++i)
    EXPECT_EQ(la.tables.steps[i].hash, lb.tables.steps[i].hash) << "step " << i;
  EXPECT_EQ(la.tables.signatures.back().signature, lb.tables.signatures.back().signature);
  EXPECT_NE(la.genesis, lo.genesis);
  EXPECT_NE(la.tables.steps.back().hash, lo.tables.steps.back().hash);
}

// Tampering helpers: edit the file as an attacker would.
template <typename T>
void overwrite(const std::filesystem::path& file, const std::string& dataset, uint64_t row,
               const T& value) {
  h5::File f = h5::File::open_rw(file);
  f.open_dataset(dataset).overwrite_rows<T>(row, &value, 1, 1);
}

void overwrite_digest(const std::filesystem::path& file, const std::string& dataset, uint64_t row,
                      const Digest& d) {
  h5::File f = h5::File::open_rw(file);
  f.open_dataset(dataset).overwrite_rows<uint8_t>(row, d.data(), 1, 32);
}

const char* kStepColumns[] = {"step",
                              "tokens",
                              "lr",
                              "weight_decay",
                              "beta1",
                              "beta2",
                              "eps",
                              "grad_clip",
                              "loss",
                              "grad_norm",
                              "clip_factor",
                              "batch_hash",
                              "rng_commitment",
                              "weight_fingerprint",
                              "prev_hash",
                              "record_hash",
                              "wall_time",
                              "step_seconds"};

// Rewrites every column of /steps through `edit`, which gets the rows of one column as bytes.
void edit_step_rows(const std::filesystem::path& file,
                    const std::function<void(std::vector<std::vector<uint8_t>>&)>& edit) {
  h5::File f = h5::File::open_rw(file);
  for (const char* col : kStepColumns) {
    h5::Dataset d = f.open_dataset(std::string("steps/") + col);
    const uint64_t n = d.rows(), width = d.width();
    const std::string name = col;
    const size_t elem =
        name == "step" || name == "tokens" || name == "wall_time" || name == "step_seconds" ? 8
        : width == 1                                                                        ? 4
                                                                                            : 1;
    const size_t row_bytes = elem * width;
    std::vector<uint8_t> flat(n * row_bytes);
    // Read as raw bytes of the stored type.
    if (elem == 8 && name != "wall_time" && name != "step_seconds") {
      auto v = d.read<uint64_t>();
      std::memcpy(flat.data(), v.data(), flat.size());
    } else if (elem == 8) {
      auto v = d.read<double>();
      std::memcpy(flat.data(), v.data(), flat.size());
    } else if (elem == 4) {
      auto v = d.read<float>();
      std::memcpy(flat.data(), v.data(), flat.size());
    } else {
      flat = d.read_matrix_rows<uint8_t>(0, n, width);
    }
    std::vector<std::vector<uint8_t>> rows(n);
    for (uint64_t i = 0; i < n; ++i)
      rows[i].assign(flat.begin() + long(i * row_bytes), flat.begin() + long((i + 1) * row_bytes));
    edit(rows);
    flat.clear();
    for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    d.set_rows(rows.size());
    const uint64_t m = rows.size();
    if (elem == 8 && name != "wall_time" && name != "step_seconds")
      d.overwrite_rows<uint64_t>(0, reinterpret_cast<const uint64_t*>(flat.data()), m, 1);
    else if (elem == 8)
      d.overwrite_rows<double>(0, reinterpret_cast<const double*>(flat.data()), m, 1);
    else if (elem == 4)
      d.overwrite_rows<float>(0, reinterpret_cast<const float*>(flat.data()), m, 1);
    else
      d.overwrite_rows<uint8_t>(0, flat.data(), m, width);
  }
}

TEST(WitnessLogTampering, EditedLossBit) {
  LogRun run;
  run.write();
  float loss = step_fields(3).loss;
  uint32_t bits;
  std::memcpy(&bits, &loss, 4);
  bits ^= 1;  // the last bit of the mantissa
  std::memcpy(&loss, &bits, 4);
  overwrite(run.file, "steps/loss", 3, loss);
  const LogReport r = run.check();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(first_problem(r),
            "steps row 3, field record_hash: does not match the row's fields "
            "(a hashed field was changed)");
  EXPECT_EQ(r.valid_steps, 3u);
}

TEST(WitnessLogTampering, EditedLossWithItsRecordHashRecomputed) {
  LogRun run;
  run.write();
  StepFields f = step_fields(3);
  f.loss = 1.0f;
  WitnessLog log = read_log(run.file);
  overwrite(run.file, "steps/loss", 3, f.loss);
  overwrite_digest(run.file, "steps/record_hash", 3, record_hash(log.tables.steps[3].prev, f));
  EXPECT_EQ(first_problem(run.check()),
            "steps row 4, field prev_hash: does not match step 3's record_hash");
}

TEST(WitnessLogTampering, WholeChainRecomputedBreaksTheSignature) {
  LogRun run;
  run.write();
  WitnessLog log = read_log(run.file);
  Digest prev = log.genesis;
  for (uint64_t i = 0; i < kSteps; ++i) {
    StepFields f = log.tables.steps[i].fields;
    if (i == 5) f.loss = 0.5f, overwrite(run.file, "steps/loss", i, f.loss);
    const Digest h = record_hash(prev, f);
    overwrite_digest(run.file, "steps/prev_hash", i, prev);
    overwrite_digest(run.file, "steps/record_hash", i, h);
    prev = h;
  }
  // The side tables' anchors give it away first; with those fixed too, the signature would.
  const LogReport r = run.check();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(first_problem(r), "field anchor")) << first_problem(r);
}

TEST(WitnessLogTampering, DeletedRow) {
  LogRun run;
  run.write();
  edit_step_rows(run.file, [](auto& rows) { rows.erase(rows.begin() + 2); });
  EXPECT_EQ(first_problem(run.check()),
            "steps row 2, field step: is 3, expected 2 (steps were removed, inserted or "
            "reordered)");
}

TEST(WitnessLogTampering, SwappedRows) {
  LogRun run;
  run.write();
  edit_step_rows(run.file, [](auto& rows) { std::swap(rows[5], rows[6]); });
  EXPECT_EQ(first_problem(run.check()),
            "steps row 5, field step: is 6, expected 5 (steps were removed, inserted or "
            "reordered)");
}

TEST(WitnessLogTampering, TruncatedRows) {
  LogRun run;
  run.write();
  edit_step_rows(run.file, [](auto& rows) { rows.resize(6); });
  const LogReport r = run.check();
  ASSERT_FALSE(r.ok());
  // The last fingerprint and eval refer to steps that are gone, and the final signature covers
  // more steps than are left.
  bool signature_flagged = false;
  for (auto& p : r.problems)
    signature_flagged |= contains(p.text(), "covers 8 steps") && contains(p.text(), "removed");
  EXPECT_TRUE(signature_flagged) << first_problem(r);
  EXPECT_FALSE(r.complete);
}

TEST(WitnessLogTampering, TruncatedFile) {
  LogRun run;
  run.write();
  const auto size = std::filesystem::file_size(run.file);
  std::filesystem::resize_file(run.file, size / 2);
  const std::string msg = error_of([&] { read_log(run.file); });
  EXPECT_TRUE(contains(msg, run.file.string())) << msg;
}

TEST(WitnessLogTampering, ResignedWithAnotherKey) {
  LogRun run;
  run.write();
  // The attacker edits a loss, recomputes every hash and signs with their own key.
  overwrite(run.file, "steps/loss", 7, 0.25f);
  WitnessLog log = read_log(run.file);
  Tables& t = log.tables;
  Digest prev = log.genesis;
  for (auto& s : t.steps) s.prev = prev, s.hash = record_hash(prev, s.fields), prev = s.hash;
  auto rechain = [&](auto& rows, auto hash_fn) {
    Digest p = log.genesis;
    for (auto& r : rows) {
      r.anchor = r.fields.step == 0 ? log.genesis : t.steps[r.fields.step - 1].hash;
      r.prev = p;
      r.hash = hash_fn(p, r.anchor, r.fields);
      p = r.hash;
    }
  };
  rechain(t.fingerprints, fingerprint_hash);
  rechain(t.checkpoints, checkpoint_hash);
  rechain(t.evals, eval_hash);
  SigningKey attacker = SigningKey::generate();
  {
    h5::File f = h5::File::open_rw(run.file);
    auto put = [&](const std::string& ds, uint64_t row, const auto& bytes) {
      f.open_dataset(ds).overwrite_rows<uint8_t>(row, bytes.data(), 1, bytes.size());
    };
    for (size_t i = 0; i < t.steps.size(); ++i)
      put("steps/prev_hash", i, t.steps[i].prev), put("steps/record_hash", i, t.steps[i].hash);
    for (size_t i = 0; i < t.fingerprints.size(); ++i)
      put("fingerprints/anchor", i, t.fingerprints[i].anchor),
          put("fingerprints/prev_hash", i, t.fingerprints[i].prev),
          put("fingerprints/row_hash", i, t.fingerprints[i].hash);
    for (size_t i = 0; i < t.checkpoints.size(); ++i)
      put("checkpoints/anchor", i, t.checkpoints[i].anchor),
          put("checkpoints/prev_hash", i, t.checkpoints[i].prev),
          put("checkpoints/row_hash", i, t.checkpoints[i].hash);
    for (size_t i = 0; i < t.evals.size(); ++i)
      put("evals/anchor", i, t.evals[i].anchor), put("evals/prev_hash", i, t.evals[i].prev),
          put("evals/row_hash", i, t.evals[i].hash);
    for (size_t i = 0; i < t.signatures.size(); ++i) {
      const Heads& h = t.signatures[i].heads;
      const Digest head =
          head_hash(heads_of(log.genesis, t, h.steps, h.fingerprints, h.checkpoints, h.evals));
      put("signatures/head", i, head);
      put("signatures/public_key", i, attacker.public_key());
      put("signatures/signature", i, attacker.sign(signed_message(head)));
    }
  }
  const LogReport r = run.check();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(first_problem(r), "signatures row 0, field public_key: signed by key " +
                                             key_id(attacker.public_key()) +
                                             ", but the run's key (in /meta) is " +
                                             key_id(run.key.public_key())))
      << first_problem(r);

  // Replacing the key in /meta too changes the run: the genesis commits to the key.
  {
    h5::File f = h5::File::open_rw(run.file);
    const auto& pk = attacker.public_key();
    f.open_group("meta").set_string_attr("public_key", to_hex(pk.data(), pk.size()));
  }
  EXPECT_TRUE(contains(first_problem(run.check()), "meta, field genesis: does not match"))
      << first_problem(run.check());
}

TEST(WitnessLogTampering, CorruptedSignature) {
  LogRun run;
  run.write();
  WitnessLog log = read_log(run.file);
  Signature s = log.tables.signatures[1].signature;
  s[10] ^= 0x40;
  {
    h5::File f = h5::File::open_rw(run.file);
    f.open_dataset("signatures/signature").overwrite_rows<uint8_t>(1, s.data(), 1, 64);
  }
  EXPECT_TRUE(contains(first_problem(run.check()),
                       "signatures row 1, field signature: is not a valid Ed25519 signature"));
}

// The last signature says where a run stands (wit query's answers end there): a trainer that
// signs an earlier head again, after a later one, would set it back. Signatures cover growing
// prefixes, so that is a problem.
TEST(WitnessLogTampering, AnEarlierHeadSignedAgainAfterALaterOne) {
  LogRun run;
  {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key, 2 * kSteps),
                                    SigningKey::load(run.save_key()));
    record(w, 0, kSteps);  // half of the run: signed at the start and after steps 4 and 8
  }
  ASSERT_TRUE(run.check().ok()) << first_problem(run.check());
  const WitnessLog log = read_log(run.file);
  Tables t = log.tables;
  ASSERT_EQ(t.signatures.size(), 3u);
  ASSERT_EQ(t.signatures[1].heads.steps, 4u);
  t.signatures.push_back(t.signatures[1]);  // a valid signature, of the 4-step head
  write_log_file(run.file, log.meta, t, {});
  const LogReport r = run.check();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(first_problem(r),
            "signatures row 3, field steps: covers 4 steps, 2 fingerprints, 1 checkpoints and 1 "
            "evals, less than signatures row 2 before it (8, 4, 2 and 2): an earlier head signed "
            "again");
  // Signing the same head twice is no problem: the final signature often repeats the last.
  t.signatures.back() = t.signatures[2];
  write_log_file(run.file, log.meta, t, {});
  EXPECT_TRUE(run.check().ok()) << first_problem(run.check());
}

TEST(WitnessLogTampering, RowsAppendedAfterTheFinalSignature) {
  LogRun run;
  run.write();
  {
    LogWriter w = LogWriter::resume(run.file, test_meta(run.key), SigningKey::load(run.save_key()),
                                    {kSteps,
                                     step_fields(kSteps - 1).weight_fingerprint,
                                     {kSteps, sha256("state 8")}});
    w.append_eval({kSteps, "val", "loss", 0.1f});  // a second, inflated final eval, not signed
  }
  const LogReport r = run.check();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(first_problem(r), "evals row 2, field step: step 8 comes after step 8"))
      << first_problem(r);
}

// With a multiple-choice evaluation committed (train.choice_eval_sha256), each evaluation is its
// val loss, choice acc and choice acc_norm rows after one step. A row missing, in another order
// or after another step is a problem; a run in progress may lack its last evaluation's later rows.
TEST(WitnessLogSchedule, AChoiceEvaluationIsItsThreeRowsAfterOneStep) {
  using Evaluate = std::function<void(LogWriter&, uint64_t)>;
  auto check = [](const Evaluate& evaluate, uint64_t steps = kSteps, bool committed_choice = true) {
    LogRun run;
    RunMeta m = test_meta(run.key);
    std::vector<std::string> keys;
    if (committed_choice) keys.push_back("train.choice_eval_sha256=" + to_hex(sha256("set")));
    m.committed_yaml = committed(kSteps, keys);
    LogWriter w = LogWriter::create(run.file, m, SigningKey::load(run.save_key()));
    for (uint64_t i = 0; i < steps; ++i) {
      w.append_step(step_fields(i), {1e9 + double(i), 0.5});
      const uint64_t done = i + 1;
      if (done % 2 == 0) w.append_fingerprint(probe_fields(done));
      if (done % 4 == 0) {
        evaluate(w, done);
        w.append_checkpoint({done, sha256("state " + std::to_string(done))});
      }
    }
    w.sign();
    return run.check();
  };
  auto rows = [](std::vector<EvalRowName> names, int64_t step_offset = 0) {
    return [names, step_offset](LogWriter& w, uint64_t done) {
      for (size_t k = 0; k < names.size(); ++k)
        w.append_eval({done + (k == names.size() - 1 ? uint64_t(step_offset) : 0),
                       names[k].split, names[k].metric, 0.25f});
    };
  };
  const EvalRowName val{"val", "loss"}, acc{"choice", "acc"}, norm{"choice", "acc_norm"};
  EXPECT_TRUE(check(rows({val, acc, norm})).ok()) << first_problem(check(rows({val, acc, norm})));
  EXPECT_TRUE(contains(first_problem(check(rows({val, norm, acc}))),
                       "evals row 1, field metric: is 'choice' 'acc_norm' where the committed "
                       "config gives 'choice' 'acc'"))
      << first_problem(check(rows({val, norm, acc})));
  EXPECT_TRUE(contains(first_problem(check(rows({val, acc}))),
                       "evals row 2, field split: is 'val' 'loss' where the committed config "
                       "gives 'choice' 'acc_norm'"))
      << first_problem(check(rows({val, acc})));
  // A row that claims a later step than its evaluation's is anchored to the wrong step.
  EXPECT_TRUE(contains(first_problem(check(rows({val, acc, norm}, 1))),
                       "evals row 2, field anchor: does not match the record hash after step 5"))
      << first_problem(check(rows({val, acc, norm}, 1)));
  const LogReport in_progress = check(rows({val, acc}), 4);
  EXPECT_TRUE(in_progress.ok()) << first_problem(in_progress);
  // Without the committed key, a choice row is one the config does not define.
  const LogReport plain = check(rows({val, acc, norm}), kSteps, false);
  EXPECT_TRUE(contains(first_problem(plain),
                       "evals row 1, field split: is 'choice' 'acc' where the committed config "
                       "gives 'val' 'loss'"))
      << first_problem(plain);
}

TEST(WitnessLogBadInput, UnknownSchemaVersion) {
  LogRun run;
  run.write();
  {
    h5::File f = h5::File::open_rw(run.file);
    f.set_int_attr("schema_version", 3);
  }
  const std::string msg = error_of([&] { read_log(run.file); });
  EXPECT_TRUE(contains(msg, "schema version 3")) << msg;
  EXPECT_TRUE(contains(msg, "upgrade wit")) << msg;
}

TEST(WitnessLogBadInput, NotAWitnessLog) {
  TempDir dir;
  { h5::File::create(dir / "other.h5").create_group("x"); }
  EXPECT_TRUE(contains(error_of([&] { read_log(dir / "other.h5"); }), "is not a witness log"));
  std::ofstream(dir / "text.h5") << "hello";
  EXPECT_TRUE(contains(error_of([&] { read_log(dir / "text.h5"); }), "not an HDF5 file"));
  EXPECT_TRUE(contains(error_of([&] { read_log(dir / "missing.h5"); }), "no such file"));
}

TEST(WitnessLogBadInput, MissingColumn) {
  LogRun run;
  run.write();
  {
    h5::File f = h5::File::open_rw(run.file);
    f.remove("steps/grad_norm");
  }
  const std::string msg = error_of([&] { read_log(run.file); });
  EXPECT_TRUE(contains(msg, "/steps/grad_norm is missing")) << msg;
}

// A log whose values live outside it. Each form would make a reader (the verifier, the board's
// audit) read another file on its own machine and echo its bytes in a message; each is refused,
// naming the object, before a value is read.
TEST(WitnessLogBadInput, ValuesKeptOutsideTheFileAreRefused) {
  const std::string secret(8 * kSteps, 'S');  // what the other file holds
  TempDir elsewhere;
  const auto secret_file = elsewhere / "secret.bin";
  std::ofstream(secret_file, std::ios::binary) << secret;
  const auto other_h5 = elsewhere / "other.h5";
  {
    h5::File f = h5::File::create(other_h5);
    f.write<uint64_t>("x", std::vector<uint64_t>(kSteps, 0x5353535353535353ull));
  }
  const hsize_t dims[1] = {kSteps};
  // Replaces the log's /steps/step (or adds a link over /steps/loss) with `edit`'s making.
  auto refusal = [&](const std::function<void(hid_t file, hid_t space)>& edit) {
    LogRun run;
    run.write();
    const hid_t file = H5Fopen(run.file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    EXPECT_GE(file, 0);
    edit(file, space);
    H5Sclose(space);
    H5Fclose(file);
    const std::string msg = error_of([&] { check_log(read_log(run.file)); });
    EXPECT_EQ(msg.find("SSSS"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(std::to_string(0x5353535353535353ull)), std::string::npos) << msg;
    return msg;
  };
  auto replace_step = [](hid_t file, hid_t space, hid_t dcpl) {
    ASSERT_GE(H5Ldelete(file, "steps/step", H5P_DEFAULT), 0);
    const hid_t d =
        H5Dcreate2(file, "steps/step", H5T_STD_U64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    H5Dclose(d);
  };

  const std::string external = refusal([&](hid_t file, hid_t space) {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    ASSERT_GE(H5Pset_external(dcpl, secret_file.c_str(), 0, hsize_t(secret.size())), 0);
    replace_step(file, space, dcpl);
    H5Pclose(dcpl);
  });
  EXPECT_TRUE(contains(external, "/steps/step keeps its values in 1 external file(s)")) << external;

  const std::string virtual_dataset = refusal([&](hid_t file, hid_t space) {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hid_t source = H5Screate_simple(1, dims, nullptr);
    ASSERT_GE(H5Pset_virtual(dcpl, space, other_h5.c_str(), "/x", source), 0);
    replace_step(file, space, dcpl);
    H5Sclose(source);
    H5Pclose(dcpl);
  });
  EXPECT_TRUE(contains(virtual_dataset, "/steps/step is a virtual dataset")) << virtual_dataset;

  const std::string external_link = refusal([&](hid_t file, hid_t) {
    ASSERT_GE(H5Ldelete(file, "steps/step", H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_external(other_h5.c_str(), "/x", file, "steps/step", H5P_DEFAULT,
                                 H5P_DEFAULT),
              0);
  });
  EXPECT_TRUE(contains(external_link, "/steps/step is an external link")) << external_link;

  const std::string soft_link = refusal([&](hid_t file, hid_t) {
    ASSERT_GE(H5Ldelete(file, "steps/loss", H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_soft("/steps/grad_norm", file, "steps/loss", H5P_DEFAULT, H5P_DEFAULT), 0);
  });
  EXPECT_TRUE(contains(soft_link, "/steps/loss is a soft link")) << soft_link;

  const std::string filtered = refusal([&](hid_t file, hid_t space) {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[1] = {4};
    ASSERT_GE(H5Pset_chunk(dcpl, 1, chunk), 0);
    ASSERT_GE(H5Pset_deflate(dcpl, 6), 0);
    replace_step(file, space, dcpl);
    H5Pclose(dcpl);
  });
  EXPECT_TRUE(contains(filtered, "/steps/step is stored through 1 filter(s)")) << filtered;
}

TEST(WitnessLogBadInput, RowCountMismatch) {
  LogRun run;
  run.write();
  {
    h5::File f = h5::File::open_rw(run.file);
    f.open_dataset("steps/record_hash").set_rows(kSteps - 1);
  }
  WitnessLog log = read_log(run.file);
  ASSERT_EQ(log.incomplete.size(), 1u);
  EXPECT_EQ(log.incomplete[0].text(),
            "steps row 7, field record_hash: column record_hash has 7 rows but step has 8: rows "
            "from 7 on are incomplete and were not read");
  EXPECT_EQ(log.tables.steps.size(), kSteps - 1);
  EXPECT_FALSE(check_log(log).ok());  // the signature covers the lost row
}

// A writer killed mid-run (SIGKILL, nothing flushed by any destructor) leaves a log that opens and
// verifies through the last complete record.
TEST(WitnessLogCrash, KilledWriterLeavesAValidPrefix) {
  LogRun run;
  const auto key_file = run.save_key();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 6);
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const LogReport r = run.check();
  EXPECT_TRUE(r.ok()) << first_problem(r);
  EXPECT_EQ(r.valid_steps, 6u);
  EXPECT_EQ(r.signed_steps, 4u);
  EXPECT_FALSE(r.complete);
}

TEST(WitnessLogResume, RowsPastTheCheckpointAreSuperseded) {
  LogRun run;
  const auto key_file = run.save_key();
  {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 7);  // checkpoint at 4, then steps 4..6 and a fingerprint at 6
  }
  std::vector<Digest> uninterrupted;
  {
    LogRun ref;
    ref.key = SigningKey::load(key_file);
    ref.write();
    for (auto& s : read_log(ref.file).tables.steps) uninterrupted.push_back(s.hash);
  }
  {
    LogWriter w = LogWriter::resume(
        run.file, test_meta(run.key), SigningKey::load(key_file),
        {4, step_fields(3).weight_fingerprint, {4, sha256("state 4")}});
    record(w, 4, kSteps);
    w.sign();
  }
  WitnessLog log = read_log(run.file);
  const LogReport r = check_log(log);
  EXPECT_TRUE(r.ok()) << first_problem(r);
  EXPECT_TRUE(r.complete);
  ASSERT_EQ(log.tables.steps.size(), kSteps);
  for (uint64_t i = 0; i < kSteps; ++i) EXPECT_EQ(log.tables.steps[i].hash, uninterrupted[i]);
  ASSERT_EQ(log.superseded.size(), 1u);
  EXPECT_EQ(log.superseded[0].first, "superseded/1");
  EXPECT_EQ(log.superseded[0].second.steps.size(), 3u);
  EXPECT_EQ(log.superseded[0].second.steps[0].fields.step, 4u);
  EXPECT_EQ(log.superseded[0].second.fingerprints.size(), 1u);
  EXPECT_TRUE(contains(r.notes.back(), "superseded/1: 3 step(s)"));
  EXPECT_EQ(sessions_in(log.meta.sessions_json), 2);
}

// The run died after writing a checkpoint but before logging it: the resume logs it.
TEST(WitnessLogResume, LogsACheckpointWrittenButNotRecorded) {
  LogRun run;
  const auto key_file = run.save_key();
  {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 6);
  }
  {
    LogWriter w = LogWriter::resume(
        run.file, test_meta(run.key), SigningKey::load(key_file),
        {6, step_fields(5).weight_fingerprint, {6, sha256("state 6")}});
    record(w, 6, kSteps);
    w.sign();
  }
  WitnessLog log = read_log(run.file);
  const LogReport r = check_log(log);
  EXPECT_TRUE(r.ok()) << first_problem(r);
  ASSERT_EQ(log.tables.checkpoints.size(), 3u);  // 4, 6 (logged by the resume), 8
  EXPECT_EQ(log.tables.checkpoints[1].fields.step, 6u);
  EXPECT_EQ(log.tables.checkpoints[1].fields.state_hash, sha256("state 6"));
  EXPECT_TRUE(log.superseded.empty());
}

TEST(WitnessLogResume, RefusesAMismatchedCheckpointOrRun) {
  LogRun run;
  const auto key_file = run.save_key();
  {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 4);
  }
  const auto before = std::filesystem::file_size(run.file);
  auto resume = [&](const RunMeta& m, ResumePoint at, const std::filesystem::path& k) {
    return error_of([&] { LogWriter::resume(run.file, m, SigningKey::load(k), at); });
  };
  const ResumePoint good{
      4, step_fields(3).weight_fingerprint, {4, sha256("state 4")}};
  ResumePoint bad_weights = good;
  bad_weights.weights[0] ^= 1;
  EXPECT_TRUE(contains(resume(test_meta(run.key), bad_weights, key_file),
                       "its weights' fingerprint differs from the one recorded after step 3"));
  ResumePoint bad_state = good;
  bad_state.checkpoint.state_hash = sha256("other");
  EXPECT_TRUE(contains(resume(test_meta(run.key), bad_state, key_file), "has state hash"));
  RunMeta other = test_meta(run.key);
  other.committed_yaml = committed(kSteps + 1);
  EXPECT_TRUE(contains(resume(other, good, key_file), "belongs to another run"));
  SigningKey stranger = SigningKey::generate();
  stranger.save(run.dir / "stranger.pem");
  EXPECT_TRUE(contains(resume(test_meta(stranger), good, run.dir / "stranger.pem"),
                       "resume with the run's key"));
  ResumePoint ahead = good;
  ahead.steps_done = 6;
  EXPECT_TRUE(contains(resume(test_meta(run.key), ahead, key_file), "records 4 steps"));
  // Nothing was written by the refused resumes.
  EXPECT_EQ(std::filesystem::file_size(run.file), before);
  EXPECT_TRUE(run.check().ok());
}

}  // namespace
}  // namespace wit::witness
