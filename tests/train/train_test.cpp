// Training end to end on the default corpus: loss goes down, resume is bitwise identical to
// never stopping, checkpoints and the exported model read back, bad resumes are refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "trainer/batch.h"
#include "trainer/checkpoint.h"
#include "trainer/data/dataset.h"
#include "trainer/safetensors.h"
#include "trainer/step.h"
#include "trainer/peak_flops.h"
#include "trainer/run_plan.h"
#include "trainer/runtime.h"
#include "trainer/tensorboard.h"
#include "trainer/train_loop.h"
#include "record/reader.h"
#include "tests/train/small_run.h"

namespace wit {
namespace {

namespace fs = std::filesystem;
using test::kjv_dir;
using test::small_run;

const char* kGoldenKjvRoot = "18a5f2e642f0d69762a0b60bd70b1e3a240a1578d921703aee10fcab338d6b80";
const char* kGoldenBatches = "9534e40e99699af914d08d902f7f2f0c9d2688da9f9738ec0464ed2ce7a7e0b8";
const uint64_t kGoldenSeed00 = 7552475924491445325ull;
const uint64_t kGoldenSeed51 = 11392426358776324596ull;
const uint64_t kGoldenInitSeed = 15163886000538457969ull;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / (tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TrainOptions options(const fs::path& run, std::vector<std::string> sets) {
  TrainOptions o;
  o.config = fs::path(WIT_SOURCE_DIR) / "configs" / "tiny.yaml";
  o.overrides = std::move(sets);
  o.run_dir = run;
  o.quiet = true;
  return o;
}

std::vector<float> logged_losses(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<float> out;
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) out.push_back(j["loss"].get<float>());
  }
  return out;
}

TEST(Train, LossDecreasesOnTheDefaultCorpus) {
  TempDir run("wit-test-loss");
  auto o = options(run.path, small_run(80));
  o.overrides.push_back("model.dropout=0.0");
  auto s = train(o);
  auto losses = logged_losses(run.path);
  ASSERT_EQ(losses.size(), 80u);
  EXPECT_NEAR(losses.front(), std::log(257.0), 0.3);  // untrained: near uniform over bytes
  float tail = 0;
  for (size_t i = 70; i < 80; ++i) tail += losses[i] / 10;
  EXPECT_LT(tail, losses.front() - 1.5) << "first " << losses.front() << " last10 " << tail;
  EXPECT_LT(s.val_loss, losses.front() - 1.0);
  EXPECT_TRUE(fs::exists(run.path / "model.safetensors"));
  EXPECT_TRUE(fs::exists(run.path / "config.yaml"));
}

TEST(Train, ResumeIsBitwiseIdenticalToNeverStopping) {
  TempDir straight("wit-test-straight"), resumed("wit-test-resumed");
  train(options(straight.path, small_run(20)));

  auto first = options(resumed.path, small_run(20));
  first.until = 10;
  auto half = train(first);
  EXPECT_EQ(half.steps_done, 10);
  EXPECT_TRUE(half.model_file.empty());
  TrainOptions again;
  again.run_dir = resumed.path;
  again.resume = true;
  again.quiet = true;
  auto done = train(again);
  EXPECT_EQ(done.steps_done, 20);
  // Resuming a finished run changes nothing.
  const std::string metrics = read_text_file(resumed.path / "metrics.jsonl");
  EXPECT_EQ(train(again).steps_done, 20);
  EXPECT_EQ(metrics, read_text_file(resumed.path / "metrics.jsonl"));

  Checkpoint a = load_checkpoint(checkpoint_path(straight.path, 20));
  Checkpoint b = load_checkpoint(checkpoint_path(resumed.path, 20));
  EXPECT_EQ(a.info.step, 20);
  EXPECT_TRUE(torch::equal(a.params, b.params));
  EXPECT_TRUE(torch::equal(a.m, b.m));
  EXPECT_TRUE(torch::equal(a.v, b.v));
  EXPECT_EQ(a.info.state_hash, b.info.state_hash);
  EXPECT_EQ(read_text_file(straight.path / "model.safetensors"),
            read_text_file(resumed.path / "model.safetensors"));
  // Per-step losses of the resumed half match too, bit for bit, and are not duplicated.
  auto la = logged_losses(straight.path), lb = logged_losses(resumed.path);
  ASSERT_EQ(la.size(), 20u);
  ASSERT_EQ(lb.size(), 20u);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_EQ(la[i], lb[i]) << "step " << i + 1;
}

// small_run(steps) trained into `a` and, with one more setting, into `b`: their logs.
std::pair<witness::WitnessLog, witness::WitnessLog> train_both(const fs::path& a, const fs::path& b,
                                                               int64_t steps,
                                                               const std::string& b_set) {
  train(options(a, small_run(steps)));
  auto sets = small_run(steps);
  sets.push_back(b_set);
  train(options(b, sets));
  return {witness::read_log(a / witness::kLogFileName),
          witness::read_log(b / witness::kLogFileName)};
}

// Recomputing each block in the backward (train.activation_checkpointing) replays its dropout:
// every step's record (loss, gradient norm, weight fingerprint: the chained row hashes), the
// checkpoints and the exported model are the bits of the run that keeps its activations.
TEST(Train, ActivationCheckpointingChangesNoBit) {
  TempDir kept("wit-test-kept"), recomputed("wit-test-recomputed");
  const auto [a, b] =
      train_both(kept.path, recomputed.path, 10, "train.activation_checkpointing=true");
  EXPECT_EQ(a.genesis, b.genesis);  // not committed: the same run
  // Each session says how it ran.
  EXPECT_FALSE(nlohmann::json::parse(a.meta.sessions_json)[0]["activation_checkpointing"].get<bool>());
  EXPECT_TRUE(nlohmann::json::parse(b.meta.sessions_json)[0]["activation_checkpointing"].get<bool>());
  ASSERT_EQ(a.tables.steps.size(), 10u);
  ASSERT_EQ(b.tables.steps.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(std::memcmp(&a.tables.steps[i].fields.loss, &b.tables.steps[i].fields.loss, 4), 0)
        << "step " << i;
    EXPECT_EQ(a.tables.steps[i].hash, b.tables.steps[i].hash) << "step " << i;
  }
  EXPECT_EQ(load_checkpoint(checkpoint_path(kept.path, 10)).info.state_hash,
            load_checkpoint(checkpoint_path(recomputed.path, 10)).info.state_hash);
  EXPECT_EQ(read_text_file(kept.path / "model.safetensors"),
            read_text_file(recomputed.path / "model.safetensors"));
}

// optim.kernels = fused commits the fused optimizer kernels, whose arithmetic is the CPU's own
// loops: a CPU run that commits it is another run (its genesis), with every step's bits the same.
TEST(Train, TheFusedOptimizerIsTheCpusOwnArithmetic) {
  TempDir ops("wit-test-optim-ops"), fused("wit-test-optim-fused");
  const auto [a, b] = train_both(ops.path, fused.path, 6, "optim.kernels=fused");
  EXPECT_NE(a.genesis, b.genesis);
  EXPECT_NE(b.meta.committed_yaml.find("kernels: \"fused\""), std::string::npos);
  ASSERT_EQ(a.tables.steps.size(), 6u);
  ASSERT_EQ(b.tables.steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const auto &x = a.tables.steps[i].fields, &y = b.tables.steps[i].fields;
    EXPECT_EQ(std::memcmp(&x.loss, &y.loss, 4), 0) << "step " << i;
    EXPECT_EQ(std::memcmp(&x.grad_norm, &y.grad_norm, 4), 0) << "step " << i;
  }
  EXPECT_EQ(read_text_file(ops.path / "model.safetensors"),
            read_text_file(fused.path / "model.safetensors"));
}

// A checkpoint written in the background, from a snapshot taken between steps, is the file the
// loop would have written, and the log records it with the same chained row: only when the
// signatures fall differs.
TEST(Train, BackgroundCheckpointsAreTheFilesAndRowsOfSynchronousOnes) {
  TempDir sync("wit-test-sync-ckpt"), background("wit-test-bg-ckpt");
  auto o = options(sync.path, small_run(12));
  o.overrides.push_back("train.checkpoint_every=2");
  o.sync_checkpoints = true;
  train(o);
  o.run_dir = background.path;
  o.sync_checkpoints = false;
  train(o);
  for (int64_t step = 2; step <= 12; step += 2)
    EXPECT_EQ(read_text_file(checkpoint_path(sync.path, step)),
              read_text_file(checkpoint_path(background.path, step)))
        << "checkpoint after step " << step;
  const witness::WitnessLog a = witness::read_log(sync.path / "witness.h5");
  const witness::WitnessLog b = witness::read_log(background.path / "witness.h5");
  const witness::LogReport ra = witness::check_log(a), rb = witness::check_log(b);
  EXPECT_TRUE(ra.problems.empty());
  ASSERT_TRUE(rb.problems.empty()) << rb.problems.front().message;
  ASSERT_EQ(a.tables.checkpoints.size(), 6u);
  ASSERT_EQ(b.tables.checkpoints.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(a.tables.checkpoints[i].hash, b.tables.checkpoints[i].hash);
  ASSERT_TRUE(ra.signed_heads && rb.signed_heads);
  EXPECT_EQ(witness::head_hash(*ra.signed_heads), witness::head_hash(*rb.signed_heads));
  // The stall is recorded apart from the write.
  const std::string metrics = read_text_file(background.path / "metrics.jsonl");
  EXPECT_NE(metrics.find("\"checkpoint_write_s\""), std::string::npos);
}

// The protocol's data side is pinned: which tokens step t sees and which seeds it uses. These
// involve no floating point, so they are the same on every machine; a change here changes
// every run's witness and must be deliberate.
TEST(Golden, DataOrderAndSeedsArePinned) {
  const auto ds = data::Dataset::open(kjv_dir());
  EXPECT_EQ(to_hex(ds.manifest().root), kGoldenKjvRoot);
  const BatchSource batches(ds.train(), 32, 4, 2, /*data seed=*/1);
  EXPECT_EQ(batches.num_samples(), 125'252u);
  Sha256 h;
  for (int64_t step : {0, 1, 7, 1000})
    for (int64_t micro = 0; micro < 2; ++micro) {
      auto t = batches.micro_batch_tokens(step, micro);
      h.update(t.data(), t.size() * 2);
    }
  EXPECT_EQ(to_hex(h.finish()), kGoldenBatches);
  EXPECT_EQ(micro_batch_seed(1, 0, 0), kGoldenSeed00);
  EXPECT_EQ(micro_batch_seed(1, 5, 1), kGoldenSeed51);
  EXPECT_EQ(init_seed(1), kGoldenInitSeed);
}

TEST(Train, ADifferentSeedGivesADifferentRun) {
  TempDir a("wit-test-seed-a"), b("wit-test-seed-b");
  train(options(a.path, small_run(3)));
  auto sets = small_run(3);
  sets.push_back("train.seed=2");
  train(options(b.path, sets));
  EXPECT_NE(load_checkpoint(checkpoint_path(a.path, 3)).info.state_hash,
            load_checkpoint(checkpoint_path(b.path, 3)).info.state_hash);
}

TEST(Train, RefusesToOverwriteOrResumeWithAnotherConfig) {
  TempDir run("wit-test-refuse");
  auto o = options(run.path, small_run(5));
  o.until = 5;
  train(o);
  const std::string before = read_text_file(checkpoint_path(run.path, 5));
  EXPECT_THROW(train(options(run.path, small_run(5))), Error);  // run dir already used

  TrainOptions r;
  r.run_dir = run.path;
  r.resume = true;
  r.quiet = true;
  r.overrides = {"optim.lr=1e-2"};
  try {
    train(r);
    FAIL() << "changing optim.lr on resume must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optim.lr"), std::string::npos) << e.what();
  }
  // A checkpoint written by another config is refused by name.
  auto cfg = read_text_file(run.path / "config.yaml");
  write_file_atomic(run.path / "config.yaml",
                    cfg.replace(cfg.find("n_embd: 64"), 10, "n_embd: 32"));
  r.overrides.clear();
  try {
    train(r);
    FAIL() << "a checkpoint from another config must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.n_embd"), std::string::npos) << e.what();
  }
  EXPECT_EQ(before, read_text_file(checkpoint_path(run.path, 5)));  // nothing was overwritten
}

TEST(Checkpoint, CorruptionAndTruncationAreDetected) {
  TempDir run("wit-test-ckpt");
  auto o = options(run.path, small_run(2));
  train(o);
  const fs::path ck = checkpoint_path(run.path, 2);
  Checkpoint good = load_checkpoint(ck);
  EXPECT_EQ(state_hash(good.info.genesis, good.info.step, good.params, good.m, good.v),
            good.info.state_hash);
  // The state hash covers the header too: no byte of the file can change unnoticed.
  const std::string whole = read_text_file(ck);
  EXPECT_EQ(parse_checkpoint(whole, "good").state_hash, good.info.state_hash);
  for (size_t i = 0; i < 64; ++i) {
    std::string edited = whole;
    edited[i] ^= 0x01;
    EXPECT_THROW(parse_checkpoint(edited, "edited header"), Error) << "header byte " << i;
  }

  std::string bytes = read_text_file(ck);
  const fs::path bad = run.path / "bad.ckpt";
  std::string flipped = bytes;
  flipped[flipped.size() - 100] ^= 1;
  write_file_atomic(bad, flipped);
  EXPECT_THROW(load_checkpoint(bad), Error);
  write_file_atomic(bad, bytes.substr(0, bytes.size() - 4));
  EXPECT_THROW(load_checkpoint(bad), Error);
  write_file_atomic(bad, "not a checkpoint at all, just text");
  EXPECT_THROW(load_checkpoint(bad), Error);
}

// Version 3's leaf table: any part of the payload is checked against the state hash without
// reading the rest, whatever the chunking or threads that hashed it.
TEST(Checkpoint, TheLeafTableChecksAnyPartAlone) {
  TempDir run("wit-test-ckpt-leaves");
  train(options(run.path, small_run(2)));
  const fs::path ck = checkpoint_path(run.path, 2);
  const Checkpoint good = load_checkpoint(ck);
  const CheckpointInfo& info = good.info;
  const int64_t n = info.num_params;
  const uint64_t L = checkpoint_leaf_count(n);
  ASSERT_EQ(info.version, 3u);
  ASSERT_GT(L, 8u) << "the test needs a payload of several leaves";
  // The leaf size balances the table against 16 sampled leaves: pinned, as part of the format.
  EXPECT_EQ(checkpoint_leaf_bytes(0), 4096u);
  EXPECT_EQ(checkpoint_leaf_bytes(3'291'392), 8192u);        // about the tiny config
  EXPECT_EQ(checkpoint_leaf_bytes(124'439'808), 32768u);     // GPT-2 124M
  EXPECT_EQ(checkpoint_leaf_bytes(1'557'611'200), 131072u);  // GPT-2 1.5B
  EXPECT_EQ(checkpoint_leaf_bytes(int64_t(1) << 40), uint64_t(1) << 20);
  const float* parts[3] = {good.params.data_ptr<float>(), good.m.data_ptr<float>(),
                           good.v.data_ptr<float>()};
  for (int threads : {1, 3, 8})
    EXPECT_EQ(state_hash_of(info.genesis, info.step, n, parts[0], parts[1], parts[2], 3, threads),
              info.state_hash)
        << threads << " threads";
  StateHasher odd(info.genesis, info.step, n);  // chunks that straddle leaves and sections
  std::string payload;
  for (const float* p : parts) payload.append(reinterpret_cast<const char*>(p), size_t(n) * 4);
  for (size_t at = 0, chunk = 1; at < payload.size(); at += chunk, chunk = chunk * 3 + 7)
    odd.update(payload.data() + at, std::min(chunk, payload.size() - at));
  EXPECT_EQ(odd.finish(), info.state_hash);

  std::vector<uint64_t> all;
  for (uint64_t i = 0; i < L; ++i) all.push_back(i);
  EXPECT_LT(verify_checkpoint_leaves(ck, {3}), fs::file_size(ck) / 4);
  EXPECT_GE(verify_checkpoint_leaves(ck, all), uint64_t(12 * n));

  const std::string bytes = read_text_file(ck);
  const fs::path bad = run.path / "bad.ckpt";
  const uint64_t leaf = checkpoint_leaf_bytes(n);
  const uint64_t header = 64, m_leaf = (uint64_t(n) * 4 + leaf) / leaf;
  {  // one byte of leaf 3 (in params): that leaf's check, the whole checks and the weights refuse
    std::string b = bytes;
    b[header + 3 * leaf + 17] ^= 1;
    write_file_atomic(bad, b);
    EXPECT_THROW(verify_checkpoint_leaves(bad, {3}), Error);
    EXPECT_NO_THROW(verify_checkpoint_leaves(bad, {2, 4}));
    EXPECT_THROW(verify_checkpoint(bad), Error);
    EXPECT_THROW(load_checkpoint(bad), Error);
    EXPECT_THROW(load_checkpoint_weights(bad), Error);
    // A rank's range (fsdp) is checked leaf by leaf: one touching leaf 3 refuses, one that does
    // not loads exactly, and a file whose state is not the one expected refuses at once.
    const int64_t per_leaf = int64_t(leaf / 4);
    EXPECT_THROW(load_checkpoint_range(bad, 3 * per_leaf + 5, per_leaf), Error);
    EXPECT_THROW(load_checkpoint_range(bad, per_leaf, 3 * per_leaf), Error);
    const Checkpoint r = load_checkpoint_range(bad, per_leaf / 2, per_leaf, &info.state_hash);
    EXPECT_TRUE(torch::equal(r.params, good.params.narrow(0, per_leaf / 2, per_leaf)));
    EXPECT_TRUE(torch::equal(r.m, good.m.narrow(0, per_leaf / 2, per_leaf)));
    EXPECT_TRUE(torch::equal(r.v, good.v.narrow(0, per_leaf / 2, per_leaf)));
    const Digest other = sha256(std::string("another state"));
    for (const auto& read : std::vector<std::function<void()>>{
             [&] { load_checkpoint_range(ck, 0, 10, &other); },
             [&] { verify_checkpoint_leaves(ck, {0}, &other); },
             [&] { verify_checkpoint(ck, &other); }}) {
      try {
        read();
        ADD_FAILURE() << "a checkpoint of another state passed";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the file changed after the check"), std::string::npos) << e.what();
      }
    }
    EXPECT_NO_THROW(verify_checkpoint_leaves(ck, {0}, &info.state_hash));
  }
  {  // a range running past P is zero-filled; the good file loads whole by ranges
    const int64_t half = n / 2 + 1;
    const Checkpoint a = load_checkpoint_range(ck, 0, half, &info.state_hash);
    const Checkpoint b = load_checkpoint_range(ck, half, half, &info.state_hash);
    EXPECT_TRUE(torch::equal(torch::cat({a.v, b.v.narrow(0, 0, n - half)}), good.v));
    EXPECT_EQ(b.v[half - 1].item<float>(), 0.0f);
  }
  {  // one byte of a leaf wholly in m: the weights alone still load
    std::string b = bytes;
    b[header + (m_leaf + 1) * leaf] ^= 1;
    write_file_atomic(bad, b);
    EXPECT_THROW(load_checkpoint(bad), Error);
    const Checkpoint w = load_checkpoint_weights(bad);
    EXPECT_TRUE(torch::equal(w.params, good.params));
    EXPECT_FALSE(w.m.defined());
  }
  {  // the table itself: no partial read trusts it
    std::string b = bytes;
    b[header + 12 * uint64_t(n) + 40] ^= 1;
    write_file_atomic(bad, b);
    EXPECT_THROW(verify_checkpoint_leaves(bad, {0}), Error);
    EXPECT_THROW(load_checkpoint_weights(bad), Error);
    EXPECT_THROW(verify_checkpoint(bad), Error);
    EXPECT_THROW(load_checkpoint(bad), Error);
    EXPECT_THROW(parse_checkpoint(b, "table"), Error);
  }
}

// Version 2 (no leaf table, one linear hash) is still read: loads, weights and checks.
TEST(Checkpoint, Version2FilesStillLoad) {
  TempDir run("wit-test-ckpt-v2");
  train(options(run.path, small_run(2)));
  const Checkpoint good = load_checkpoint(checkpoint_path(run.path, 2));
  const CheckpointInfo& info = good.info;
  const int64_t n = info.num_params;
  StateHasher h(info.genesis, info.step, n, 2);
  std::string v2 = read_text_file(checkpoint_path(run.path, 2)).substr(0, 64 + 12 * size_t(n));
  v2[8] = 2;  // the version field
  h.update(v2.data() + 64, 12 * size_t(n));
  const Digest d = h.finish();
  v2.append(reinterpret_cast<const char*>(d.data()), 32).append("WITCKEND");
  const fs::path old = run.path / "old.ckpt";
  write_file_atomic(old, v2);
  EXPECT_EQ(state_hash(info.genesis, info.step, good.params, good.m, good.v, 2), d);
  EXPECT_NE(d, info.state_hash);
  const Checkpoint c = load_checkpoint(old);
  EXPECT_EQ(c.info.version, 2u);
  EXPECT_TRUE(torch::equal(c.v, good.v));
  EXPECT_TRUE(torch::equal(load_checkpoint_weights(old).params, good.params));
  EXPECT_EQ(verify_checkpoint_leaves(old, {0}), fs::file_size(old));  // read whole
  EXPECT_EQ(parse_checkpoint(v2, "v2").state_hash, d);
  // A rank's range (fsdp) of a version-2 file: the whole payload is hashed in the same open.
  const Checkpoint r = load_checkpoint_range(old, 5, 7, &d);
  EXPECT_TRUE(torch::equal(r.m, good.m.narrow(0, 5, 7)));
  v2[64 + 12 * size_t(n) - 3] ^= 1;  // a byte of v, far from the range
  write_file_atomic(old, v2);
  EXPECT_THROW(load_checkpoint_range(old, 5, 7, &d), Error);
  v2[64 + 12 * size_t(n) - 3] ^= 1;
  v2[64 + 5] ^= 1;
  write_file_atomic(old, v2);
  EXPECT_THROW(verify_checkpoint_leaves(old, {0}), Error);
  EXPECT_THROW(load_checkpoint_weights(old), Error);
}

TEST(Checkpoint, AFailedWriteLeavesThePreviousCheckpointIntact) {
  TempDir run("wit-test-ckpt-fail");
  train(options(run.path, small_run(2)));
  const fs::path ck = checkpoint_path(run.path, 2);
  const std::string before = read_text_file(ck);
  const CheckpointInfo info = read_checkpoint_info(ck);
  {
    // A write that stops half-way (an error, a full disk): the writer is destroyed unfinished.
    CheckpointWriter w(ck, info);
    std::vector<float> some(1000, 1.0f);
    w.write(some.data(), int64_t(some.size()));
  }
  EXPECT_EQ(before, read_text_file(ck));
  for (auto& e : fs::directory_iterator(ck.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  // And a writer given too little data refuses to finish rather than commit a short file.
  CheckpointWriter w(ck, info);
  EXPECT_THROW(w.finish(), Error);
  EXPECT_EQ(before, read_text_file(ck));
}

TEST(Safetensors, ExportReadsBackWithHuggingFaceLayout) {
  TempDir run("wit-test-st");
  auto s = train(options(run.path, small_run(2)));
  std::map<std::string, std::string> meta;
  auto tensors = read_safetensors(s.model_file, &meta);
  EXPECT_EQ(meta.at("wit.step"), "2");
  Checkpoint ck = load_checkpoint(s.checkpoint);
  model::GPTConfig cfg{2, 2, 64, 257, 64, 0.1};
  auto specs = model::gpt_param_specs(cfg);
  ASSERT_EQ(tensors.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(tensors[i].first, specs[i].name);
    auto stored = ck.params.narrow(0, specs[i].offset, specs[i].numel).view(specs[i].shape);
    if (specs[i].hf_transposed) stored = stored.t();
    EXPECT_TRUE(torch::equal(tensors[i].second, stored)) << specs[i].name;
  }
  // Conv1D layout: c_attn is (in, out) = (64, 192) as in transformers' GPT-2.
  EXPECT_EQ(tensors[4].second.sizes(), (std::vector<int64_t>{64, 192}));
}

TEST(PeakFlops, KnownGpusHaveTheirDatasheetPeakAndOthersNone) {
  EXPECT_DOUBLE_EQ(*datasheet_peak_flops("NVIDIA H100 80GB HBM3", true), 989.4e12);
  EXPECT_DOUBLE_EQ(*datasheet_peak_flops("NVIDIA H100 PCIe", true), 756.0e12);
  EXPECT_DOUBLE_EQ(*datasheet_peak_flops("NVIDIA H200", false), 66.9e12);
  EXPECT_DOUBLE_EQ(*datasheet_peak_flops("NVIDIA A100-SXM4-80GB", true), 312.0e12);
  // Whole words only: an L40S is not an L4, an A100 not an A10, an A10G not known.
  EXPECT_DOUBLE_EQ(*datasheet_peak_flops("NVIDIA L40S", true), 362.0e12);
  EXPECT_DOUBLE_EQ(*datasheet_peak_flops("NVIDIA L4", true), 121.0e12);
  EXPECT_FALSE(datasheet_peak_flops("NVIDIA A10G", true));
  EXPECT_FALSE(datasheet_peak_flops("cpu", false));
}

TEST(TensorBoard, Crc32cIsCastagnolisAndEventFilesAreFramedRecords) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the check value of CRC-32C
  EXPECT_EQ(crc32c(""), 0u);
  TempDir dir("wit-test-tensorboard");
  std::filesystem::path file;
  {
    EventFileWriter w(dir.path / "tb");
    w.scalar("train/loss", 7, 2.5, 1.0e9);
    file = w.path();
  }
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u);
  const std::string bytes = read_text_file(file);
  // Two records: the version event, then the scalar; each is length, CRC, data, CRC.
  size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    uint64_t n;
    std::memcpy(&n, bytes.data() + at, 8);
    ASSERT_LE(at + 16 + n, bytes.size());
    const std::string data = bytes.substr(at + 12, n);
    uint32_t stored;
    std::memcpy(&stored, bytes.data() + at + 12 + n, 4);
    const uint32_t c = crc32c(data);
    EXPECT_EQ(stored, ((c >> 15) | (c << 17)) + 0xa282ead8u);
    if (records == 0) {
      EXPECT_NE(data.find("brain.Event:2"), std::string::npos);
    }
    if (records == 1) {
      EXPECT_NE(data.find("train/loss"), std::string::npos);
    }
    at += 16 + n;
    ++records;
  }
  EXPECT_EQ(records, 2);
}

}  // namespace
}  // namespace wit
