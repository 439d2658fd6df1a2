#include "trainer/train_loop.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <functional>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"
#include "core/fs.h"
#include "trainer/checkpoint.h"
#include "trainer/choice_eval.h"
#include "trainer/data/dataset.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/hf_tokenizer.h"
#include "trainer/data/tokenizer.h"
#include "trainer/compute.h"
#include "trainer/device_comm.h"
#include "trainer/generate.h"
#include "trainer/dist/mpi_communicator.h"
#include "trainer/layout.h"
#include "record/run_config.h"
#include "trainer/run_plan.h"
#include "trainer/runtime.h"
#include "trainer/peak_flops.h"
#include "trainer/safetensors.h"
#include "trainer/metrics_file.h"
#include "trainer/peak_flops.h"
#include "trainer/step.h"
#include "trainer/witnessing.h"
#include "record/writer.h"

namespace wit {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct ResolvedRun {
  config::Config cfg;
  fs::path run_dir;
};

ResolvedRun resolve(const TrainOptions& o) {
  const auto& schema = run_schema();
  if (o.resume) {
    if (o.run_dir.empty()) fail("--resume needs the run directory");
    const fs::path cfg_file = o.run_dir / "config.yaml";
    if (!fs::exists(cfg_file))
      fail("{} is not a run directory (no config.yaml); nothing to resume", o.run_dir.string());
    for (auto& ov : o.overrides) {
      const std::string key = ov.substr(0, ov.find('='));
      const auto& ok = resume_mutable_keys();
      if (std::find(ok.begin(), ok.end(), key) == ok.end() && schema.find(key))
        fail(
            "--set {}: cannot change {} when resuming: the run's witness log committed to it "
            "(changeable: {})",
            ov, key, fmt::join(ok, ", "));
    }
    return {config::Config::load(cfg_file, schema, o.overrides), o.run_dir};
  }
  if (o.config.empty()) fail("wit train needs a config file (e.g. configs/tiny.yaml)");
  auto cfg = config::Config::load(o.config, schema, o.overrides);
  fs::path dir = o.run_dir.empty() ? fs::path("runs") / o.config.stem() : o.run_dir;
  if (fs::exists(dir / "config.yaml") || fs::exists(dir / "checkpoints"))
    fail(
        "{} already holds a run: continue it with `wit train --resume {}` or choose another "
        "--out",
        dir.string(), dir.string());
  return {std::move(cfg), dir};
}

// A resume must continue the run its log committed to: the committed config may not change.
// Says which key changed, where the genesis alone would only say that something did.
void check_resumable(const fs::path& log_file, const config::Config& cfg,
                     const witness::PublicKey& key, const Compute& compute) {
  if (!fs::exists(log_file)) return;  // LogWriter::resume says why that is fatal
  const witness::WitnessLog log = witness::read_log(log_file);
  if (log.meta.public_key != key)
    fail("{} is signed by key {}, but the key given is {}: resume with the run's key (--key)",
         log_file.string(), witness::key_id(log.meta.public_key), witness::key_id(key));
  const config::Config committed = parse_committed(log.meta.committed_yaml, log_file.string());
  check_resume_compute(log.meta.sessions_json, compute, log_file.string());
  std::vector<std::string> diffs;
  for (auto& d : committed.differences(cfg, {})) {
    const auto key = d.substr(0, d.find(':'));
    const auto& ok = resume_mutable_keys();
    if (std::find(ok.begin(), ok.end(), key) == ok.end()) diffs.push_back(d);
  }
  if (!diffs.empty())
    fail("{} committed to a different config ({}{}): a resume continues the same run",
         log_file.string(), diffs.front(),
         diffs.size() > 1 ? fmt::format(" and {} more", diffs.size() - 1) : "");
}

// Whether an exception is an allocation that failed: the GPU's (c10::OutOfMemoryError) or the
// host's (std::bad_alloc, or libtorch's CPU allocator refusing).
bool out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || dynamic_cast<const std::bad_alloc*>(&e))
    return true;
  const std::string what = e.what();
  return what.find("DefaultCPUAllocator: not enough memory") != std::string::npos ||
         what.find("DefaultCPUAllocator: can't allocate memory") != std::string::npos;
}

// One step; running out of memory stops the run with what to change. The log holds every step
// before this one and stays valid, but a smaller micro-batch is another trajectory (the
// micro-batch size is committed), so the way on is a new run, not a resume.
StepRecord step_or_explain_memory(Layout& layout, const StepContext& ctx, const Compute& compute,
                                  const fs::path& dir) {
  try {
    return train_step(layout, ctx);
  } catch (const std::exception& e) {
    if (!out_of_memory(e)) throw;
    fail(
        "out of {} memory in step {} ({} parameters, {} sequences of {} tokens per micro-batch): "
        "lower train.micro_batch_size (raising train.micro_batches keeps the tokens per step), "
        "or spread the state with dist.mode=fsdp over more processes. {} keeps every step before "
        "this one, but its committed config fixes the micro-batch size: `wit train --resume` "
        "cannot change it, so start a new run with the smaller micro-batch",
        compute.is_cuda() ? "GPU" : "host", layout.steps_done(), layout.num_params(),
        ctx.data->micro_batch_size(), ctx.data->seq_len(), dir.string());
  }
}

// One run of `wit train` on this process: set-up (the run directory, the compute, the model and
// its data, the genesis, the state to start from, the witness log), the step loop with its
// committed cadence of fingerprints, evaluations and checkpoints, and the finish (the final
// evaluation, the signed log, the exported model). Collective: every rank builds one and
// calls the same methods in the same order.
class Training {
 public:
  Training(const TrainOptions& opts, const TrainHooks& hooks, dist::Communicator& comm)
      : opts_(opts),
        hooks_(hooks),
        comm_(comm),
        is_root_(comm.is_root()),
        quiet_(opts.quiet || !comm.is_root()) {}

  TrainSummary run();

 private:
  // Set-up.
  void build();
  void open_data();
  void start_state();
  void resume_state();
  void resolve_initial_weights();
  void open_choice_eval();
  void initialise();
  void open_log();
  void announce();
  // The loop and what the committed cadence asks for after a step.
  void step_loop();
  void report_progress(const StepRecord& rec);
  void checkpoint();
  void settle(bool wait);
  void log_checkpoint(int64_t step, const Digest& state, const Digest& anchor, double stall_s,
                      double write_s);
  void fingerprint();
  void evaluate();
  void print_sample();
  void finish();
  void write_tokenizer_files();
  // Appends to the log; a failure (disk full, say) stops the run saying what it leaves behind.
  void record(const std::function<void(witness::LogWriter&)>& write);

  int64_t steps_done() const { return layout_->steps_done(); }
  const fs::path& dir() const { return run_->run_dir; }

  const TrainOptions& opts_;
  const TrainHooks& hooks_;
  dist::Communicator& comm_;
  const bool is_root_, quiet_;

  std::optional<ResolvedRun> run_;
  std::optional<Compute> compute_;
  RunConfig rc_;
  std::unique_ptr<dist::Communicator> device_comm_;  // gradients on a GPU travel over NCCL
  dist::Communicator* step_comm_ = nullptr;
  std::unique_ptr<Layout> layout_;
  std::optional<witness::SigningKey> key_;  // rank 0
  std::optional<torch::Tensor> initial_;  // model.init_from's weights, until the state has them
  std::optional<data::Dataset> dataset_;
  std::optional<RunPlan> plan_;
  std::optional<data::ChoiceSet> choices_;  // train.choice_eval, on every rank that evaluates
  witness::PublicKey public_key_{};
  Digest genesis_{};
  fs::path last_ckpt_;
  Digest loaded_state_{};
  std::optional<witness::LogWriter> log_;  // rank 0, unless the run had finished already
  int64_t total_ = 0, stop_ = 0, first_step_ = 0, saved_step_ = -1;
  double flops_per_token_ = 0, peak_ = 0;
  std::unique_ptr<MetricsFile> metrics_;
  TrainSummary summary_;

  // Checkpoints: the state is copied between steps (the loop's only stall) and written on a
  // thread of its own while training goes on; the log records it once it is durable, anchored
  // to its own step. One is in flight at a time. Fsdp, and --sync-checkpoints, write in the loop.
  struct Pending {
    int64_t step;
    Digest anchor;  // the record hash of its step
    std::unique_ptr<BackgroundCheckpoint> write;
    double stall_s;
    Clock::time_point start;
  };
  std::optional<Pending> pending_;  // rank 0
  HostState snapshot_;              // rank 0: reused by every background checkpoint

  // Text samples (train.sample_every), decoded with the dataset's tokenizer.
  bool sampling_ = false;
  std::unique_ptr<data::Gpt2Tokenizer> sample_gpt2_;

  // Progress lines: tokens per second over the window since the last line.
  Clock::time_point window_start_, run_start_;
  int64_t window_tokens_ = 0;
};

TrainSummary Training::run() {
  if (opts_.until == 0) fail("--until must be at least 1 step");
  build();
  open_data();
  start_state();
  open_log();
  announce();
  step_loop();
  finish();
  return summary_;
}

// The run directory and config, the compute, the layout and the signing key.
void Training::build() {
  run_.emplace(resolve(opts_));
  comm_.barrier();  // every rank has checked the run directory before rank 0 writes into it
  // The device, precision and attention kernel, resolved here (model.attention = auto becomes
  // the kernel this run uses, which the genesis commits to).
  compute_.emplace(resolve_compute(run_->cfg, comm_.size(), quiet_));
  rc_ = run_config_from(run_->cfg);
  resolve_initial_weights();
  // Gradients on a GPU travel over NCCL; control messages stay on MPI.
  device_comm_ = device_communicator(comm_, *compute_, quiet_);
  step_comm_ = device_comm_ ? device_comm_.get() : &comm_;
  // The layout checks its rules (world size, M) before anything is written.
  layout_ = make_layout(rc_.dist_mode, rc_.model, rc_.train.micro_batches, *step_comm_, *compute_);
  layout_->checkpoint_activations(rc_.train.activation_checkpointing);
  // The key first: a run that could not sign its log must not start.
  if (is_root_) key_ = training_key(opts_.key, quiet_);
  set_compute_threads(int(rc_.train.threads));
  keep_freed_memory();
}

// The dataset, the committed schedule over it and the run's genesis, which its checkpoints and
// log are bound to (the key lives on rank 0).
void Training::open_data() {
  dataset_.emplace(data::Dataset::open(rc_.data.dir));
  if (dataset_->vocab_size() > rc_.model.vocab_size)
    fail("dataset {} has a vocabulary of {} tokens but model.vocab_size is {}",
         rc_.data.dir.string(), dataset_->vocab_size(), rc_.model.vocab_size);
  plan_.emplace(rc_, *dataset_);
  open_choice_eval();
  if (is_root_) public_key_ = key_->public_key();
  comm_.broadcast(public_key_.data(), public_key_.size(), 0);
  genesis_ = witness::genesis_hash(committed_yaml(run_->cfg), dataset_->manifest().root,
                                   data::layout_digest(dataset_->manifest()),
                                   uint64_t(layout_->num_params()), public_key_);
  total_ = rc_.train.steps;
}

// A new run's initial state, or a resumed run's last checkpoint.
void Training::start_state() {
  if (opts_.resume) {
    resume_state();
    return;
  }
  if (is_root_) {
    fs::create_directories(dir());
    write_file_atomic(dir() / "config.yaml", run_->cfg.to_yaml());
  }
  initialise();
}

// A new run that starts from given weights (model.init_from) reads and hashes them before anything
// commits to its config: the hash becomes model.init_sha256, which the genesis commits to (a
// value given must match). A resume reads them only if it starts again from step 0.
void Training::resolve_initial_weights() {
  if (rc_.init.from.empty()) {
    if (!rc_.init.sha256.empty())
      fail("model.init_sha256 is set but model.init_from is not: give the weights it names with "
           "--set model.init_from=PATH");
    return;
  }
  if (opts_.resume) return;
  initial_ = import_gpt2_safetensors(rc_.init.from, rc_.model);
  const std::string hex = to_hex(params_sha256(*initial_));
  if (!rc_.init.sha256.empty() && rc_.init.sha256 != hex)
    fail("{} holds weights with SHA-256 {}, but model.init_sha256 is {}", rc_.init.from.string(),
         hex, rc_.init.sha256);
  run_->cfg.set("model.init_sha256", hex, "model.init_from, hashed");
  rc_ = run_config_from(run_->cfg);
}

// A new run with a multiple-choice evaluation (train.choice_eval) reads and hashes its file before
// the genesis commits to its config: the hash becomes train.choice_eval_sha256 (a value given
// must match). A resume must find the file it committed to; none can be added then.
void Training::open_choice_eval() {
  const std::string& committed = rc_.train.choice_eval_sha256;
  if (rc_.train.choice_eval.empty()) {
    if (!committed.empty())
      fail("{} scores a multiple-choice evaluation (train.choice_eval_sha256 {}): give its file "
           "with --set train.choice_eval=PATH",
           opts_.resume ? dir().string() : std::string("the config"), committed.substr(0, 16));
    return;
  }
  if (opts_.resume && committed.empty())
    fail("--set train.choice_eval: {} committed to no multiple-choice evaluation, and a resume "
         "cannot add one",
         dir().string());
  dist::agree_on_errors(comm_, [&] {
    choices_ = data::load_choice_set(rc_.train.choice_eval, dataset_->manifest(),
                                     rc_.model.context, committed);
  });
  if (committed.empty()) {
    run_->cfg.set("train.choice_eval_sha256", to_hex(choices_->sha256), "train.choice_eval, hashed");
    rc_ = run_config_from(run_->cfg);
  }
}

// The state before step 0: the committed initial weights, or GPT-2's initialisation from the seed.
void Training::initialise() {
  if (rc_.init.sha256.empty()) return layout_->init(init_seed(rc_.train.seed));
  if (!initial_) {
    if (rc_.init.from.empty())
      fail("{} starts from given weights (model.init_sha256 {}): give them with --set "
           "model.init_from=PATH",
           dir().string(), rc_.init.sha256.substr(0, 16));
    initial_ = import_gpt2_safetensors(rc_.init.from, rc_.model);
    if (to_hex(params_sha256(*initial_)) != rc_.init.sha256)
      fail("{} holds other weights than the run started from (model.init_sha256 {})",
           rc_.init.from.string(), rc_.init.sha256.substr(0, 16));
  }
  layout_->init_from(*initial_);
  initial_.reset();
}

void Training::resume_state() {
  if (is_root_) {
    check_resumable(dir() / witness::kLogFileName, run_->cfg, public_key_, *compute_);
    remove_checkpoint_temporaries(dir());  // a write the interruption cut short
  }
  if (auto ck = latest_checkpoint(dir())) {
    const CheckpointInfo info = read_checkpoint_info(*ck);
    loaded_state_ = info.state_hash;
    if (info.genesis != genesis_)
      fail(
          "checkpoint {} belongs to another run (genesis {}, this run's is {}): the committed "
          "config, the dataset, the model or the signing key differ",
          ck->string(), to_hex(info.genesis).substr(0, 16), to_hex(genesis_).substr(0, 16));
    if (checkpoint_path(dir(), info.step) != *ck)
      fail("checkpoint {} says it holds the state after step {}: it was renamed or is corrupt",
           ck->string(), info.step);
    layout_->load(*ck, info.state_hash);
    last_ckpt_ = *ck;
    if (!quiet_)
      fmt::print("resuming {} from step {} ({})\n", dir().string(), steps_done(), ck->string());
  } else {
    initialise();
    if (!quiet_) fmt::print("resuming {}: no checkpoint yet, starting at step 0\n", dir().string());
  }
  if (is_root_) truncate_metrics(dir() / "metrics.jsonl", steps_done());
}

// The witness log: created with the run, continued on resume, never written by a resume of a
// finished run.
void Training::open_log() {
  const fs::path log_file = dir() / witness::kLogFileName;
  const bool finished_already =
      opts_.resume && steps_done() == total_ && fs::exists(dir() / "model.safetensors");
  const std::string session = session_json(*step_comm_, rc_, layout_->name(), steps_done(), *compute_);
  witness::Fingerprint loaded_weights{};
  if (!last_ckpt_.empty()) loaded_weights = layout_->weight_fingerprint();
  if (is_root_ && !finished_already) {
    const auto meta =
        run_meta(run_->cfg, dataset_->manifest(), layout_->num_params(), key_->public_key(), session);
    if (opts_.resume) {
      const witness::ResumePoint at{
          uint64_t(steps_done()), loaded_weights, {uint64_t(steps_done()), loaded_state_}};
      log_.emplace(witness::LogWriter::resume(log_file, meta, std::move(*key_), at));
    } else {
      log_.emplace(witness::LogWriter::create(log_file, meta, std::move(*key_)));
    }
  }
  summary_ = TrainSummary{dir(), steps_done(), 0, 0, last_ckpt_, {}, log_file, is_root_};
}

// MFU's denominator, the run's size and where it runs, said once before the first step.
void Training::announce() {
  stop_ = opts_.until >= 0 ? std::min(opts_.until, total_) : total_;
  flops_per_token_ = model::gpt_flops_per_token(rc_.model, rc_.data.seq_len);
  // Every process's peak, from the GPU's datasheet where the table knows it (timing a matmul
  // varies from run to run), else timed now on this process's compute.
  const Compute& compute = *compute_;
  const std::optional<double> datasheet =
      compute.is_cuda() ? datasheet_peak_flops(device_facts(compute).value("gpu", ""), compute.bf16)
                        : std::nullopt;
  const double peak_per_process = datasheet ? *datasheet : measure_matmul_flops(compute);
  peak_ = peak_per_process * double(comm_.size());
  if (!quiet_) {
    fmt::print(
        "run {}: {:.2f}M parameters, {} steps x {} tokens, data {} ({} train windows), "
        "{} process(es) ({})\n",
        dir().string(), double(layout_->num_params()) / 1e6, total_, rc_.tokens_per_step(),
        rc_.data.dir.string(), plan_->batches().num_samples(), comm_.size(), comm_.backend());
    fmt::print("layout {}: {:.1f} MB of parameters and AdamW state on each rank\n",
               layout_->name(), double(layout_->state_bytes()) / 1e6);
    if (compute.is_cuda()) fmt::print("compute: {}\n", device_facts(compute).dump());
    const std::string basis =
        datasheet ? fmt::format("the GPU's {} datasheet peak", compute.bf16 ? "bf16" : "fp32")
        : compute.is_cuda()
            ? fmt::format("an {}^3 {} matmul on the GPU, timed now (a GPU the table of "
                          "datasheet peaks does not know)",
                          kGpuPeakSize, compute.bf16 ? "bf16" : "fp32")
            : fmt::format("a 1024^3 fp32 matmul on {} thread(s), timed now", rc_.train.threads);
    fmt::print("MFU is measured against {:.1f} GFLOP/s per process x {} process(es): {}\n",
               peak_per_process / 1e9, comm_.size(), basis);
    std::fflush(stdout);
  }
  metrics_ = std::make_unique<MetricsFile>(dir() / "metrics.jsonl", is_root_);
  saved_step_ = last_ckpt_.empty() ? -1 : steps_done();
  // The snapshot's buffers are allocated and faulted in now (a copy of the initial state), not
  // in the first checkpoint's stall.
  if (!opts_.sync_checkpoints) layout_->snapshot(snapshot_);
  // Samples change nothing the step uses: no gradients, and draws from a generator of their own.
  sampling_ = rc_.train.sample_every > 0 && !opts_.quiet;
  if (sampling_ && is_root_ && dataset_->manifest().tokenizer == "gpt2")
    sample_gpt2_ = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir({}));
}

void Training::record(const std::function<void(witness::LogWriter&)>& write) {
  if (!log_) return;
  try {
    write(*log_);
  } catch (const std::exception& e) {
    fail(
        "cannot write the witness log: {}; the run stops here, and `wit train --resume {}` "
        "continues it from the last checkpoint once the cause is fixed",
        e.what(), dir().string());
  }
}

void Training::step_loop() {
  window_start_ = run_start_ = Clock::now();
  first_step_ = steps_done();
  while (steps_done() < stop_) {
    if (hooks_.before_step) hooks_.before_step(comm_.rank(), steps_done());
    const auto step_start = Clock::now();
    const StepRecord rec = step_or_explain_memory(*layout_, plan_->context(), *compute_, dir());
    const double step_secs = std::chrono::duration<double>(Clock::now() - step_start).count();
    record([&](witness::LogWriter& w) {
      w.append_step(step_fields(rec), {unix_now(), step_secs});
    });
    settle(false);
    if (!std::isfinite(rec.loss))
      fail("loss became {} at step {}: lower optim.lr or check the data", rec.loss, rec.step);
    summary_.last_loss = rec.loss;
    window_tokens_ += rec.tokens;
    const bool last = steps_done() == stop_;
    if (steps_done() % rc_.train.log_every == 0 || last) report_progress(rec);
    // The committed cadence; the final evaluation and checkpoint come after the loop, and a run
    // stopped early (--until) checkpoints where it stops.
    if (rc_.fingerprint_after(steps_done())) fingerprint();
    if (rc_.eval_after(steps_done()) && steps_done() != total_) evaluate();
    if (rc_.checkpoint_after(steps_done()) && !last) checkpoint();
    if (sampling_ && steps_done() % rc_.train.sample_every == 0 && !last) print_sample();
  }
  if (saved_step_ != steps_done()) checkpoint();
  summary_.steps_done = steps_done();
}

// A metrics line and a progress line: tokens per second and MFU over the window since the last.
void Training::report_progress(const StepRecord& rec) {
  const double secs = std::chrono::duration<double>(Clock::now() - window_start_).count();
  const double tps = double(window_tokens_) / std::max(secs, 1e-9);
  const double mfu = tps * flops_per_token_ / peak_;
  const double elapsed = std::chrono::duration<double>(Clock::now() - run_start_).count();
  const double eta = elapsed / double(steps_done() - first_step_) * double(stop_ - steps_done());
  metrics_->write({{"step", steps_done()},
                   {"loss", rec.loss},
                   {"lr", rec.hyper.lr},
                   {"grad_norm", rec.grad_norm},
                   {"tokens_per_s", tps},
                   {"mfu", mfu}});
  if (!quiet_) {
    fmt::print(
        "step {:>6}/{} | loss {:.4f} | lr {:.2e} | norm {:.3f} | {:.0f} tok/s | "
        "MFU {:.1f}% | ETA {}\n",
        steps_done(), total_, rec.loss, rec.hyper.lr, rec.grad_norm, tps, 100 * mfu,
        format_duration(eta));
    std::fflush(stdout);
  }
  window_start_ = Clock::now();
  window_tokens_ = 0;
}

void Training::log_checkpoint(int64_t step, const Digest& state, const Digest& anchor,
                              double stall_s, double write_s) {
  record([&](witness::LogWriter& w) {
    w.append_checkpoint({uint64_t(step), state}, anchor);
    w.sign();
  });
  metrics_->write({{"step", step}, {"checkpoint_s", stall_s}, {"checkpoint_write_s", write_s}});
}

// Logs the checkpoint in flight once it is durable (or waits for it).
void Training::settle(bool wait) {
  if (!pending_ || (!wait && !pending_->write->finished())) return;
  Digest state;
  try {
    state = pending_->write->wait();
  } catch (const std::exception& e) {
    fail(
        "cannot write checkpoint {}: {}; the run stops here, and `wit train --resume {}` "
        "continues it from the last checkpoint once the cause is fixed",
        checkpoint_path(dir(), pending_->step).string(), e.what(), dir().string());
  }
  log_checkpoint(pending_->step, state, pending_->anchor, pending_->stall_s,
                 std::chrono::duration<double>(Clock::now() - pending_->start).count());
  pending_.reset();
}

void Training::checkpoint() {  // collective
  const auto start = Clock::now();
  settle(true);  // the previous write, if still going, is part of this stall
  summary_.checkpoint = checkpoint_path(dir(), steps_done());
  const CheckpointInfo info{steps_done(), layout_->num_params(), genesis_, {}};
  saved_step_ = steps_done();
  const Digest anchor = log_ ? log_->heads().step_head : Digest{};
  if (!opts_.sync_checkpoints && layout_->snapshot(snapshot_)) {
    if (!is_root_) return;
    auto write = std::make_unique<BackgroundCheckpoint>(summary_.checkpoint, info, snapshot_);
    pending_ = Pending{steps_done(), anchor, std::move(write),
                       std::chrono::duration<double>(Clock::now() - start).count(), start};
    return;
  }
  const Digest state = layout_->save(summary_.checkpoint, info);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (is_root_) log_checkpoint(steps_done(), state, anchor, secs, secs);
}

void Training::fingerprint() {  // collective
  const witness::FingerprintFields f = layout_->fingerprint(plan_->probe_batch());
  record([&](witness::LogWriter& w) { w.append_fingerprint(f); });
}

void Training::evaluate() {  // collective
  const float val = layout_->evaluate(dataset_->val(), rc_.data.seq_len,
                                      rc_.train.micro_batch_size, rc_.train.eval_batches);
  std::optional<ChoiceScore> choice;
  if (choices_) choice = score_choices(*layout_, *choices_);
  if (!is_root_) return;
  // One evaluation's rows in one append: a run stopped between them never leaves half of one
  // before its checkpoint.
  const uint64_t step = uint64_t(steps_done());
  record([&](witness::LogWriter& w) {
    w.append_eval({step, "val", "loss", val});
    if (choice) {
      w.append_eval({step, "choice", "acc", choice->acc()});
      w.append_eval({step, "choice", "acc_norm", choice->acc_norm()});
    }
  });
  nlohmann::json m = {{"step", steps_done()}, {"val_loss", val}};
  if (choice) m["choice_acc"] = choice->acc(), m["choice_acc_norm"] = choice->acc_norm();
  metrics_->write(m);
  if (!quiet_) {
    fmt::print("step {:>6}/{} | val loss {:.4f}", steps_done(), total_, val);
    if (choice)
      fmt::print(" | choice acc_norm {:.4f} acc {:.4f} ({} examples)", choice->acc_norm(),
                 choice->acc(), choice->examples);
    fmt::print("\n");
  }
  summary_.val_loss = val;
}

void Training::print_sample() {  // collective
  const torch::Tensor params = layout_->full_params();
  if (!is_root_) return;
  const data::Manifest& manifest = dataset_->manifest();
  if (manifest.tokenizer == "external") {
    if (steps_done() == total_)
      fmt::print("sample: none (the data was tokenized outside wit, with a tokenizer it does not know)\n");
    return;
  }
  const uint16_t eot = uint16_t(manifest.eot_token);
  SampleOptions so;
  so.tokens = 64;
  so.seed = uint64_t(steps_done());
  so.stop_token = eot;
  so.vocab = dataset_->vocab_size();
  std::string text;
  Sampler(rc_.model, params).generate({eot}, so, [&](uint16_t t) {
    if (t != eot) text += sample_gpt2_ ? sample_gpt2_->token_bytes(t) : data::decode_bytes(&t, 1);
    return true;
  });
  fmt::print("step {:>6}/{} | sample:\n{}\n", steps_done(), total_, text);
  std::fflush(stdout);
}

// Hugging Face tokenizer files beside the model, for the dataset's tokenizer (none for data
// tokenized outside wit). They are a convenience: a missing GPT-2 vocabulary costs the files,
// not the run.
void Training::write_tokenizer_files() {
  const std::string& kind = dataset_->manifest().tokenizer;
  try {
    if (kind == "byte") {
      data::write_hf_tokenizer(dir(), data::byte_hf_tokenizer(), rc_.model.context);
    } else if (kind == "gpt2") {
      if (!sample_gpt2_) sample_gpt2_ = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir({}));
      data::write_hf_tokenizer(dir(), data::gpt2_hf_tokenizer(*sample_gpt2_), rc_.model.context);
    }
  } catch (const Error& e) {
    if (!quiet_) fmt::print("note: no tokenizer files beside model.safetensors: {}\n", e.what());
  }
}

// The final evaluation, the signed log and the exported model; a resume of a finished run only
// reports it.
void Training::finish() {
  const Compute& compute = *compute_;
  if (compute.is_cuda())
    metrics_->write({{"step", steps_done()}, {"peak_device_bytes", peak_device_bytes(compute)}});
  const fs::path model_file = dir() / "model.safetensors";
  if (first_step_ == total_ && fs::exists(model_file)) {
    // Resuming a finished run: report it, evaluate and export nothing twice.
    summary_.model_file = model_file;
    summary_.val_loss = last_logged(dir() / "metrics.jsonl", "val_loss");
    summary_.last_loss = last_logged(dir() / "metrics.jsonl", "loss");
    if (!quiet_) fmt::print("run {} was already complete\n", dir().string());
  } else if (steps_done() == total_) {
    evaluate();
    if (sampling_) print_sample();
    settle(true);
    record([&](witness::LogWriter& w) { w.sign(); });
    summary_.model_file = model_file;
    layout_->export_model(model_file, {{"format", "pt"},
                                       {"wit.step", std::to_string(steps_done())},
                                       {"wit.manifest_root", to_hex(dataset_->manifest().root)}});
    if (is_root_) write_tokenizer_files();
  }
  settle(true);  // a run stopped early (--until): its last checkpoint logged before it returns
}

}  // namespace

TrainSummary train(const TrainOptions& opts, const TrainHooks& hooks) {
  auto comm = dist::make_communicator();
  try {
    return Training(opts, hooks, *comm).run();
  } catch (const SharedError&) {
    throw;  // every rank raised it: each ends on its own, rank 0 reports
  } catch (const std::exception& e) {
    if (comm->size() == 1) throw;
    // The other ranks may be waiting in a collective: report, then take the whole job down.
    fmt::print(stderr, "wit: error (rank {} of {}): {}\n", comm->rank(), comm->size(), e.what());
    std::fflush(stderr);
    comm->abort(1);
    throw;
  }
}

}  // namespace wit
