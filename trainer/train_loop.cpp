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

#include "core/error.h"
#include "core/fs.h"
#include "trainer/checkpoint.h"
#include "trainer/data/dataset.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizer.h"
#include "trainer/compute.h"
#include "trainer/device_comm.h"
#include "trainer/generate.h"
#include "trainer/dist/mpi_communicator.h"
#include "trainer/layout.h"
#include "trainer/run_config.h"
#include "trainer/run_plan.h"
#include "trainer/runtime.h"
#include "trainer/peak_flops.h"
#include "trainer/safetensors.h"
#include "trainer/tensorboard.h"
#include "trainer/step.h"
#include "trainer/witnessing.h"
#include "witness/log/writer.h"

namespace wit {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

double measure_matmul_flops(int reps) {
  torch::NoGradGuard g;
  auto a = torch::randn({1024, 1024}), b = torch::randn({1024, 1024});
  a.mm(b);
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    auto c = a.mm(b);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * 1024.0 * 1024.0 * 1024.0 / best;
}

double measure_matmul_flops(const Compute& compute, int reps) {
  if (!compute.is_cuda()) return measure_matmul_flops(reps);
  torch::NoGradGuard g;
  const int64_t n = kGpuPeakSize;
  const auto opts =
      torch::TensorOptions().device(compute.device).dtype(compute.bf16 ? torch::kBFloat16
                                                                       : torch::kFloat32);
  auto a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
  auto sync = [&] { synchronize(compute); };
  for (int i = 0; i < 3; ++i) a.mm(b);  // warm-up: kernel choice, clocks
  sync();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    auto c = a.mm(b);
    sync();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * double(n) * double(n) * double(n) / best;
}

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}


// Metrics lines past `step` belong to a stretch of training that a resume redoes.
void truncate_metrics(const fs::path& file, int64_t step) {
  if (!fs::exists(file)) return;
  std::ifstream in(file);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("step") && j["step"].get<int64_t>() > step) continue;
    kept += line + "\n";
  }
  write_file_atomic(file, kept);
}

float last_logged(const fs::path& file, const char* key) {
  std::ifstream in(file);
  std::string line;
  float value = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains(key)) value = j[key].get<float>();
  }
  return value;
}

// Appended by rank 0 only; on other ranks writes are dropped.
// metrics.jsonl, and the same scalars as TensorBoard event files in RUN/tensorboard/.
class MetricsFile {
 public:
  MetricsFile(const fs::path& p, bool enabled)
      : f_(enabled ? std::fopen(p.c_str(), "a") : nullptr), path_(p) {
    if (enabled && !f_) fail("cannot open {} for writing", p.string());
    if (enabled) events_ = std::make_unique<EventFileWriter>(p.parent_path() / "tensorboard");
  }
  ~MetricsFile() {
    if (f_) std::fclose(f_);
  }
  void write(const nlohmann::json& j) {
    if (!f_) return;
    const std::string s = j.dump() + "\n";
    write_all(f_, s.data(), s.size(), path_);
    std::fflush(f_);
    const double now = unix_now();
    for (const auto& [name, value] : j.items())
      if (name != "step" && value.is_number())
        events_->scalar(tensorboard_tag(name), j["step"].get<int64_t>(), value.get<double>(), now);
  }

 private:
  // TensorBoard groups tags by their prefix: training, evaluation, checkpoints, the device.
  static std::string tensorboard_tag(const std::string& name) {
    if (name == "val_loss") return "val/loss";
    if (name.rfind("checkpoint", 0) == 0 || name.rfind("peak_", 0) == 0) return "system/" + name;
    return "train/" + name;
  }
  std::FILE* f_;
  fs::path path_;
  std::unique_ptr<EventFileWriter> events_;
};

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

// A test hook: WIT_INJECT_FAULT=RANK:STEP makes that rank throw before that step, to check that
// one failing rank brings the whole job down instead of leaving the others waiting.
void maybe_inject_fault(int rank, int64_t step) {
  const char* spec = std::getenv("WIT_INJECT_FAULT");
  if (!spec) return;
  int r = -1;
  long long s = -1;
  if (std::sscanf(spec, "%d:%lld", &r, &s) == 2 && r == rank && s == step)
    fail("fault injected on rank {} at step {} (WIT_INJECT_FAULT)", rank, step);
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

TrainSummary train_on(const TrainOptions& opts, dist::Communicator& comm) {
  const bool is_root = comm.is_root();
  const bool quiet = opts.quiet || !is_root;
  if (opts.until == 0) fail("--until must be at least 1 step");
  ResolvedRun run = resolve(opts);
  comm.barrier();  // every rank has checked the run directory before rank 0 writes into it
  // The device, precision and attention kernel, resolved here (model.attention = auto becomes
  // the kernel this run uses, which the genesis commits to).
  const Compute compute = resolve_compute(run.cfg, comm.size(), quiet);
  const RunConfig rc = run_config_from(run.cfg);
  // Gradients on a GPU travel over NCCL; control messages stay on MPI.
  const std::unique_ptr<dist::Communicator> device_comm =
      device_communicator(comm, compute, quiet);
  dist::Communicator& step_comm = device_comm ? *device_comm : comm;
  // The layout checks its rules (world size, M) before anything is written.
  auto layout = make_layout(rc.dist_mode, rc.model, rc.train.micro_batches, step_comm, compute);
  const fs::path& dir = run.run_dir;
  // The key first: a run that could not sign its log must not start.
  std::optional<witness::SigningKey> key;
  if (is_root) key = training_key(opts.key, quiet);
  set_compute_threads(int(rc.train.threads));
  keep_freed_memory();

  const auto dataset = data::Dataset::open(rc.data.dir);
  if (dataset.vocab_size() > rc.model.vocab_size)
    fail("dataset {} has a vocabulary of {} tokens but model.vocab_size is {}",
         rc.data.dir.string(), dataset.vocab_size(), rc.model.vocab_size);
  const Digest root = dataset.manifest().root;
  const RunPlan plan(rc, dataset);
  const BatchSource& batches = plan.batches();
  const std::string config_yaml = run.cfg.to_yaml();
  // The run's genesis, which its checkpoints and log are bound to; the key lives on rank 0.
  witness::PublicKey public_key{};
  if (is_root) public_key = key->public_key();
  comm.broadcast(public_key.data(), public_key.size(), 0);
  const Digest genesis =
      witness::genesis_hash(committed_yaml(run.cfg), root, data::layout_digest(dataset.manifest()),
                            uint64_t(layout->num_params()), public_key);
  fs::path last_ckpt;
  Digest loaded_state{};
  if (opts.resume) {
    if (is_root) {
      check_resumable(dir / witness::kLogFileName, run.cfg, public_key, compute);
      remove_checkpoint_temporaries(dir);  // a write the interruption cut short
    }
    if (auto ck = latest_checkpoint(dir)) {
      const CheckpointInfo info = read_checkpoint_info(*ck);
      loaded_state = info.state_hash;
      if (info.genesis != genesis)
        fail(
            "checkpoint {} belongs to another run (genesis {}, this run's is {}): the committed "
            "config, the dataset, the model or the signing key differ",
            ck->string(), to_hex(info.genesis).substr(0, 16), to_hex(genesis).substr(0, 16));
      if (checkpoint_path(dir, info.step) != *ck)
        fail("checkpoint {} says it holds the state after step {}: it was renamed or is corrupt",
             ck->string(), info.step);
      layout->load(*ck);
      last_ckpt = *ck;
      if (!quiet)
        fmt::print("resuming {} from step {} ({})\n", dir.string(), layout->steps_done(),
                   ck->string());
    } else {
      layout->init(init_seed(rc.train.seed));
      if (!quiet) fmt::print("resuming {}: no checkpoint yet, starting at step 0\n", dir.string());
    }
    if (is_root) truncate_metrics(dir / "metrics.jsonl", layout->steps_done());
  } else {
    if (is_root) {
      fs::create_directories(dir);
      write_file_atomic(dir / "config.yaml", config_yaml);
    }
    layout->init(init_seed(rc.train.seed));
  }

  const int64_t total = rc.train.steps;
  auto steps_done = [&] { return layout->steps_done(); };

  // The witness log: created with the run, continued on resume, never written by a resume of a
  // finished run.
  const fs::path log_file = dir / witness::kLogFileName;
  const bool finished_already =
      opts.resume && steps_done() == total && fs::exists(dir / "model.safetensors");
  const std::string session = session_json(step_comm, rc, layout->name(), steps_done(), compute);
  witness::Fingerprint loaded_weights{};
  if (!last_ckpt.empty()) loaded_weights = layout->weight_fingerprint();
  std::optional<witness::LogWriter> log;
  if (is_root && !finished_already) {
    const auto meta =
        run_meta(run.cfg, dataset.manifest(), layout->num_params(), key->public_key(), session);
    if (opts.resume) {
      const witness::ResumePoint at{
          uint64_t(steps_done()),
          loaded_weights,
          {uint64_t(steps_done()), loaded_state}};
      log.emplace(witness::LogWriter::resume(log_file, meta, std::move(*key), at));
    } else {
      log.emplace(witness::LogWriter::create(log_file, meta, std::move(*key)));
    }
  }
  // Appends to the log; a failure (disk full, say) stops the run saying what it leaves behind.
  auto record = [&](const std::function<void(witness::LogWriter&)>& write) {
    if (!log) return;
    try {
      write(*log);
    } catch (const std::exception& e) {
      fail(
          "cannot write the witness log: {}; the run stops here, and `wit train --resume {}` "
          "continues it from the last checkpoint once the cause is fixed",
          e.what(), dir.string());
    }
  };
  const int64_t stop = opts.until >= 0 ? std::min(opts.until, total) : total;
  const double flops_per_token = model::gpt_flops_per_token(rc.model, rc.data.seq_len);
  // MFU's denominator: every process's peak, from the GPU's datasheet where the table knows it
  // (timing a matmul varies from run to run), else timed now on this process's compute.
  const std::optional<double> datasheet =
      compute.is_cuda() ? datasheet_peak_flops(device_facts(compute).value("gpu", ""), compute.bf16)
                        : std::nullopt;
  const double peak_per_process = datasheet ? *datasheet : measure_matmul_flops(compute);
  const double peak = peak_per_process * double(comm.size());
  if (!quiet) {
    fmt::print(
        "run {}: {:.2f}M parameters, {} steps x {} tokens, data {} ({} train windows), "
        "{} process(es) ({})\n",
        dir.string(), double(layout->num_params()) / 1e6, total, rc.tokens_per_step(),
        rc.data.dir.string(), batches.num_samples(), comm.size(), comm.backend());
    fmt::print("layout {}: {:.1f} MB of parameters and AdamW state on each rank\n",
               layout->name(), double(layout->state_bytes()) / 1e6);
    if (compute.is_cuda())
      fmt::print("compute: {}\n", device_facts(compute).dump());
    fmt::print("MFU is measured against {:.1f} GFLOP/s per process x {} process(es): {}\n",
               peak_per_process / 1e9, comm.size(),
               datasheet ? fmt::format("the GPU's {} datasheet peak", compute.bf16 ? "bf16" : "fp32")
               : compute.is_cuda()
                   ? fmt::format("an {}^3 {} matmul on the GPU, timed now (a GPU the table of "
                                 "datasheet peaks does not know)",
                                 kGpuPeakSize, compute.bf16 ? "bf16" : "fp32")
                   : fmt::format("a 1024^3 fp32 matmul on {} thread(s), timed now", rc.train.threads));
    std::fflush(stdout);
  }

  MetricsFile metrics(dir / "metrics.jsonl", is_root);
  TrainSummary summary{dir, steps_done(), 0, 0, last_ckpt, {}, log_file, is_root};
  int64_t saved_step = last_ckpt.empty() ? -1 : steps_done();

  // Checkpoints: the state is copied between steps (the loop's only stall) and written on a
  // thread of its own while training goes on; the log records it once it is durable, anchored to
  // its own step. One is in flight at a time. Fsdp, and --sync-checkpoints, write in the loop.
  struct Pending {
    int64_t step;
    Digest anchor;  // the record hash of its step
    std::unique_ptr<BackgroundCheckpoint> write;
    double stall_s;
    Clock::time_point start;
  };
  std::optional<Pending> pending;  // rank 0
  HostState snapshot;              // rank 0: reused by every background checkpoint
  // Its buffers are allocated and faulted in now (a copy of the initial state), not in the
  // first checkpoint's stall.
  if (!opts.sync_checkpoints) layout->snapshot(snapshot);
  auto log_checkpoint = [&](int64_t step, const Digest& state, const Digest& anchor, double stall_s,
                            double write_s) {
    record([&](witness::LogWriter& w) {
      w.append_checkpoint({uint64_t(step), state}, anchor);
      w.sign();
    });
    metrics.write({{"step", step}, {"checkpoint_s", stall_s}, {"checkpoint_write_s", write_s}});
  };
  // Logs the checkpoint in flight once it is durable (or waits for it).
  auto settle = [&](bool wait) {
    if (!pending || (!wait && !pending->write->finished())) return;
    Digest state;
    try {
      state = pending->write->wait();
    } catch (const std::exception& e) {
      fail(
          "cannot write checkpoint {}: {}; the run stops here, and `wit train --resume {}` "
          "continues it from the last checkpoint once the cause is fixed",
          checkpoint_path(dir, pending->step).string(), e.what(), dir.string());
    }
    log_checkpoint(pending->step, state, pending->anchor, pending->stall_s,
                   std::chrono::duration<double>(Clock::now() - pending->start).count());
    pending.reset();
  };
  auto checkpoint = [&] {  // collective
    const auto start = Clock::now();
    settle(true);  // the previous write, if still going, is part of this stall
    summary.checkpoint = checkpoint_path(dir, steps_done());
    const CheckpointInfo info{steps_done(), layout->num_params(), genesis, {}};
    saved_step = steps_done();
    const Digest anchor = log ? log->heads().step_head : Digest{};
    if (!opts.sync_checkpoints && layout->snapshot(snapshot)) {
      if (!is_root) return;
      auto write = std::make_unique<BackgroundCheckpoint>(summary.checkpoint, info, snapshot);
      pending = Pending{steps_done(), anchor, std::move(write),
                        std::chrono::duration<double>(Clock::now() - start).count(), start};
      return;
    }
    const Digest state = layout->save(summary.checkpoint, info);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    if (is_root) log_checkpoint(steps_done(), state, anchor, secs, secs);
  };
  auto fingerprint = [&] {  // collective
    const witness::FingerprintFields f = layout->fingerprint(plan.probe_batch());
    record([&](witness::LogWriter& w) { w.append_fingerprint(f); });
  };
  auto eval = [&] {  // collective
    const float val = layout->evaluate(dataset.val(), rc.data.seq_len, rc.train.micro_batch_size,
                                       rc.train.eval_batches);
    if (!is_root) return;
    record([&](witness::LogWriter& w) {
      w.append_eval({uint64_t(steps_done()), "val", "loss", val});
    });
    metrics.write({{"step", steps_done()}, {"val_loss", val}});
    if (!quiet) fmt::print("step {:>6}/{} | val loss {:.4f}\n", steps_done(), total, val);
    summary.val_loss = val;
  };

  // Text samples (train.sample_every), decoded with the dataset's tokenizer. They change nothing
  // the step uses: no gradients, and draws from a generator of their own.
  const bool sampling = rc.train.sample_every > 0 && !opts.quiet;
  const std::string sample_tokenizer = dataset.manifest().tokenizer;
  std::unique_ptr<data::Gpt2Tokenizer> sample_gpt2;
  if (sampling && is_root && sample_tokenizer == "gpt2")
    sample_gpt2 = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir({}));
  auto print_sample = [&] {  // collective
    const torch::Tensor params = layout->full_params();
    if (!is_root) return;
    if (sample_tokenizer == "external") {
      if (steps_done() == total)
        fmt::print("sample: none (the data was tokenized outside wit, with a tokenizer it does not know)\n");
      return;
    }
    const uint16_t eot = uint16_t(dataset.manifest().eot_token);
    SampleOptions so;
    so.tokens = 64;
    so.seed = uint64_t(steps_done());
    so.stop_token = eot;
    so.vocab = dataset.vocab_size();
    std::string text;
    Sampler(rc.model, params).generate({eot}, so, [&](uint16_t t) {
      if (t != eot) text += sample_gpt2 ? sample_gpt2->token_bytes(t) : data::decode_bytes(&t, 1);
      return true;
    });
    fmt::print("step {:>6}/{} | sample:\n{}\n", steps_done(), total, text);
    std::fflush(stdout);
  };

  auto window_start = Clock::now();
  int64_t window_tokens = 0;
  const auto run_start = Clock::now();
  const int64_t first_step = steps_done();
  while (steps_done() < stop) {
    maybe_inject_fault(comm.rank(), steps_done());
    const auto step_start = Clock::now();
    const StepRecord rec = step_or_explain_memory(*layout, plan.context(), compute, dir);
    const double step_secs = std::chrono::duration<double>(Clock::now() - step_start).count();
    record([&](witness::LogWriter& w) {
      w.append_step(step_fields(rec), {unix_now(), step_secs});
    });
    settle(false);
    if (!std::isfinite(rec.loss))
      fail("loss became {} at step {}: lower optim.lr or check the data", rec.loss, rec.step);
    summary.last_loss = rec.loss;
    window_tokens += rec.tokens;
    const bool last = steps_done() == stop;
    if (steps_done() % rc.train.log_every == 0 || last) {
      const double secs = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double tps = double(window_tokens) / std::max(secs, 1e-9);
      const double mfu = tps * flops_per_token / peak;
      const double elapsed = std::chrono::duration<double>(Clock::now() - run_start).count();
      const double eta = elapsed / double(steps_done() - first_step) * double(stop - steps_done());
      metrics.write({{"step", steps_done()},
                     {"loss", rec.loss},
                     {"lr", rec.hyper.lr},
                     {"grad_norm", rec.grad_norm},
                     {"tokens_per_s", tps},
                     {"mfu", mfu}});
      if (!quiet) {
        fmt::print(
            "step {:>6}/{} | loss {:.4f} | lr {:.2e} | norm {:.3f} | {:.0f} tok/s | "
            "MFU {:.1f}% | ETA {}\n",
            steps_done(), total, rec.loss, rec.hyper.lr, rec.grad_norm, tps, 100 * mfu,
            format_duration(eta));
        std::fflush(stdout);
      }
      window_start = Clock::now();
      window_tokens = 0;
    }
    // The committed cadence; the final evaluation and checkpoint come after the loop, and a run
    // stopped early (--until) checkpoints where it stops.
    if (rc.fingerprint_after(steps_done())) fingerprint();
    if (rc.eval_after(steps_done()) && steps_done() != total) eval();
    if (rc.checkpoint_after(steps_done()) && !last) checkpoint();
    if (sampling && steps_done() % rc.train.sample_every == 0 && !last) print_sample();
  }
  if (saved_step != steps_done()) checkpoint();
  summary.steps_done = steps_done();
  if (compute.is_cuda()) metrics.write({{"step", steps_done()}, {"peak_device_bytes", peak_device_bytes(compute)}});
  const fs::path model_file = dir / "model.safetensors";
  if (first_step == total && fs::exists(model_file)) {
    // Resuming a finished run: report it, evaluate and export nothing twice.
    summary.model_file = model_file;
    summary.val_loss = last_logged(dir / "metrics.jsonl", "val_loss");
    summary.last_loss = last_logged(dir / "metrics.jsonl", "loss");
    if (!quiet) fmt::print("run {} was already complete\n", dir.string());
  } else if (steps_done() == total) {
    eval();
    if (sampling) print_sample();
    settle(true);
    record([&](witness::LogWriter& w) { w.sign(); });
    summary.model_file = model_file;
    layout->export_model(model_file, {{"format", "pt"},
                                      {"wit.step", std::to_string(steps_done())},
                                      {"wit.manifest_root", to_hex(root)}});
  }
  settle(true);  // a run stopped early (--until): its last checkpoint logged before it returns
  return summary;
}

}  // namespace

TrainSummary train(const TrainOptions& opts) {
  auto comm = dist::make_communicator();
  try {
    return train_on(opts, *comm);
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
