// The witness log: round trip, chain verification, each kind of tampering detected, and the rows
// a schedule asks for. Tampering edits the HDF5 file in place, as an attacker with the file would.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "core/h5.h"
#include "tests/data/temp_dir.h"
#include "record/reader.h"
#include "record/run_config.h"
#include "record/writer.h"
#include "tests/witness/log_run.h"

namespace wit::witness {
namespace {

using wit::testing::contains;
using wit::testing::error_of;

using namespace log_testing;

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

}  // namespace
}  // namespace wit::witness
