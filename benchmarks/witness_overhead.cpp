// What witnessing costs a training step, on one CPU thread, in one run: the real `train_step`
// with its witness facts (micro-batch token hashes, the weight sketch, seal_record) followed by
// the log's append_step (18 column appends and an HDF5 flush of the live file), against the same
// step with `StepContext::witness` off and no append. The machine is shared and its clock
// drifts, so the two variants alternate step by step (A B, B A, ...) on one model, and the
// overhead is the median of the per-pair ratios (and, beside it, the ratio of the medians). The
// parts are also timed on their own: the sketch and the hashing right after each plain step
// (same cache state as inside the step), append_step inside each witnessed step. First, a
// log-size pass appends synthetic rows with random (incompressible) hashes and reports the bytes
// a step adds to the log.
//
//   build/benchmarks/wit_bench_witness [--data data/kjv] [--pairs 40] [--large-pairs 3]
//                                      [--log-rows 20480] [--only log|tiny|124m]
//   build/benchmarks/wit_bench_witness --config FILE [--set k=v ...] [--name NAME] [--pairs N]
//     one config, on its own device and precision (benchmarks/gpu_baselines.sh), ending with a
//     "json: {...}" line
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <nlohmann/json.hpp>
#include <string>

#include "benchmarks/bench_data.h"
#include "core/clock.h"
#include "core/config.h"
#include "trainer/data/dataset.h"
#include "trainer/data/prepare.h"
#include "record/run_config.h"
#include "trainer/runtime.h"
#include "trainer/compute.h"
#include "trainer/device_ops.h"
#include "trainer/run_plan.h"
#include "trainer/step.h"
#include "trainer/witnessing.h"
#include "record/writer.h"
#include "trainer/cpu_numerics.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using wit::unix_now;

double secs_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}


double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A fresh directory for one log, removed with the object.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / fmt::format("wit-bench-witness-{}-{}", tag, getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct Run {
  wit::config::Config cfg;
  wit::RunConfig rc;
  wit::Compute compute;
};

Run load(const fs::path& config, std::vector<std::string> sets, const fs::path& data_dir) {
  sets.push_back("data.dir=" + data_dir.string());
  sets.push_back("train.threads=1");
  auto cfg = wit::config::Config::load(config, wit::run_schema(), sets);
  const wit::Compute compute = wit::resolve_compute(cfg, 1, /*quiet=*/true);
  auto rc = wit::run_config_from(cfg);
  return {std::move(cfg), std::move(rc), compute};
}

// The log a run of this config would write: its real /meta, a fresh key.
wit::witness::LogWriter open_log(const fs::path& file, const Run& run,
                                 const wit::data::Manifest& manifest, int64_t num_params,
                                 wit::dist::Communicator& comm) {
  auto key = wit::witness::SigningKey::generate();
  const auto meta = wit::run_meta(run.cfg, manifest, num_params, key.public_key(),
                                  wit::session_json(comm, run.rc, "ddp", 0));
  return wit::witness::LogWriter::create(file, meta, std::move(key));
}

// Bytes per step row: file size after `rows` synthetic rows minus after none.
void log_size(const Run& run, const wit::data::Manifest& manifest, uint64_t rows) {
  TempDir dir("log");
  const fs::path file = dir.path / wit::witness::kLogFileName;
  auto comm = wit::dist::make_single_process();
  std::mt19937_64 rng(1);
  auto random_bytes = [&rng](auto& a) {
    for (auto& b : a) b = uint8_t(rng());
  };
  std::uniform_real_distribution<float> uf(0.f, 1.f);
  std::vector<double> append_s;
  uint64_t empty = 0, live = 0;
  {
    auto log =
        open_log(file, run, manifest, 0, *comm);  // /meta's values do not change a row's size
    empty = fs::file_size(file);
    for (uint64_t i = 0; i < rows; ++i) {
      wit::witness::StepFields f;
      f.step = i;
      f.tokens = uint64_t(run.rc.tokens_per_step());
      f.lr = uf(rng);
      f.weight_decay = 0.1f;
      f.beta1 = 0.9f;
      f.beta2 = 0.95f;
      f.eps = 1e-8f;
      f.grad_clip = 1.0f;
      f.loss = uf(rng);
      f.grad_norm = uf(rng);
      f.clip_factor = uf(rng);
      random_bytes(f.batch_hash);
      random_bytes(f.rng_commitment);
      random_bytes(f.weight_fingerprint);
      const auto t0 = Clock::now();
      log.append_step(f, {unix_now(), double(uf(rng))});
      append_s.push_back(secs_since(t0));
    }
    live = fs::file_size(file);
  }
  const uint64_t closed = fs::file_size(file);
  const double per_row = double(live - empty) / double(rows);
  fmt::print(
      "log size: {} B with no step rows, {} B after {} rows ({} B once closed): {:.1f} B per "
      "step, {:.1f} MB per 1M steps; append_step + flush median {:.3f} ms\n",
      empty, live, rows, closed, per_row, per_row, 1e3 * median(append_s));
  std::fflush(stdout);
}

struct Result {
  std::string name;
  double params, plain_s, witnessed_s;        // medians
  double pair_ratio, pair_lo, pair_hi;        // median of witnessed/plain per pair, its interval
  double sketch_s, hash_s, seal_s, append_s;  // medians
  double target;                              // overhead target (fraction)
  std::optional<double> sketch_ops_s;         // on a GPU: the sketch's torch operations' form
};

Result measure(const std::string& name, const Run& run, const wit::data::Dataset& ds, int pairs,
               double target) {
  const auto& rc = run.rc;
  const wit::RunPlan plan(rc, ds);
  const wit::BatchSource& batches = plan.batches();
  auto comm = wit::dist::make_single_process();
  auto layout = wit::make_layout("ddp", rc.model, rc.train.micro_batches, *comm, run.compute);
  layout->init(1);
  const int64_t P = layout->num_params(), M = rc.train.micro_batches;
  // On a GPU a step's last kernels may still run when it returns: every timing ends here.
  auto done = [&] { wit::synchronize(run.compute); };
  const wit::OptimizerState& opt = layout->optimizer();
  wit::StepContext plain = plan.context();
  plain.witness = false;
  wit::StepContext witnessed = plain;
  witnessed.witness = true;

  TempDir dir("run");
  auto log = open_log(dir.path / wit::witness::kLogFileName, run, ds.manifest(), P, *comm);
  // Both variants advance the same model, so the witnessed rows are every other step: renumber
  // them, since the log wants consecutive steps.
  uint64_t rows = 0;
  std::vector<double> plain_s, witnessed_s, append_s, sketch_s, hash_s, seal_s, sketch_ops_s;
  volatile uint32_t sink = 0;  // keeps the sketches timed alone from being optimised away

  auto run_plain = [&](bool timed) {
    const auto t0 = Clock::now();
    wit::train_step(*layout, plain);
    done();
    const double s = secs_since(t0);
    // The parts, alone, on what the witnessed step would have seen: the parameters just updated,
    // this step's micro-batches.
    auto t1 = Clock::now();
    const auto sketch = wit::sketch_weights(layout->local_params(), 0);
    const double sk = secs_since(t1);
    sink = sketch.lanes[0];
    // On a GPU, the sketch's other form too (its kernel's check; docs/gpu.md), for the ratio.
    double sk_ops = 0;
    if (!run.compute.device.is_cpu()) {
      t1 = Clock::now();
      sink = wit::sketch_weights_by_ops(layout->local_params(), 0).lanes[0];
      sk_ops = secs_since(t1);
    }
    std::vector<wit::MicroBatchWitness> facts;
    double hs = 0;
    for (int64_t i = 0; i < M; ++i) {
      const auto tokens = batches.micro_batch_tokens(opt.step - 1, i);
      t1 = Clock::now();
      facts.push_back({i, wit::witness::micro_batch_hash(tokens.data(), tokens.size()),
                       wit::micro_batch_seed(rc.train.seed, opt.step - 1, i)});
      hs += secs_since(t1);
    }
    wit::StepRecord rec;
    t1 = Clock::now();
    wit::seal_record(rec, facts, sketch, M, *comm);
    const double se = secs_since(t1);
    if (!timed) return;
    plain_s.push_back(s);
    sketch_s.push_back(sk);
    if (!run.compute.device.is_cpu()) sketch_ops_s.push_back(sk_ops);
    hash_s.push_back(hs);
    seal_s.push_back(se);
  };
  auto run_witnessed = [&](bool timed) {
    const auto t0 = Clock::now();
    const wit::StepRecord rec = wit::train_step(*layout, witnessed);
    done();
    const double step = secs_since(t0);
    auto f = wit::step_fields(rec);
    f.step = rows++;
    const auto t1 = Clock::now();
    log.append_step(f, {unix_now(), step});
    const double s = secs_since(t0), a = secs_since(t1);
    if (!timed) return;
    witnessed_s.push_back(s);
    append_s.push_back(a);
  };

  run_plain(false);  // warm-up: allocations, first-touch, the sketch tables
  run_witnessed(false);
  for (int i = 0; i < pairs; ++i) {
    if (i % 2 == 0) {
      run_plain(true);
      run_witnessed(true);
    } else {
      run_witnessed(true);
      run_plain(true);
    }
    fmt::print(
        "  {} pair {}/{}: plain {:.3f} s, witnessed {:.3f} s ({:+.2f} %), sketch {:.2f} ms, "
        "append {:.2f} ms\n",
        name, i + 1, pairs, plain_s.back(), witnessed_s.back(),
        100 * (witnessed_s.back() / plain_s.back() - 1), 1e3 * sketch_s.back(),
        1e3 * append_s.back());
    std::fflush(stdout);
  }
  std::vector<double> ratios;
  for (size_t i = 0; i < plain_s.size(); ++i) ratios.push_back(witnessed_s[i] / plain_s[i]);
  // Distribution-free ~95 % interval of the paired median: the order statistics n/2 ± 0.98·√n
  // (at n = 3 it is min..max and covers 75 %).
  std::sort(ratios.begin(), ratios.end());
  const double n = double(ratios.size()), half = 0.98 * std::sqrt(n);
  const size_t lo = size_t(std::max(0.0, std::floor(n / 2 - half)));
  const size_t hi = size_t(std::min(n - 1, std::ceil(n / 2 + half) - 1));
  Result r{name,           double(P),      median(plain_s),  median(witnessed_s),
           median(ratios), ratios[lo],     ratios[hi],       median(sketch_s),
           median(hash_s), median(seal_s), median(append_s), target,
           std::nullopt};
  if (!sketch_ops_s.empty()) {
    r.sketch_ops_s = median(sketch_ops_s);
    fmt::print(
        "{}: the weight sketch on {}: its kernel {:.3f} ms, its torch operations {:.3f} ms\n", name,
        run.compute.device.str(), 1e3 * r.sketch_s, 1e3 * *r.sketch_ops_s);
  }
  return r;
}

void print_table(const std::vector<Result>& rs) {
  const auto row = "{:<26} {:>8} {:>8} {:>11} {:>9} {:>22} {:>16} {:>13} {:>16} {:>8}\n";
  fmt::print("\n");
  fmt::print(row, "config", "params", "plain s", "witnessed s", "overhead", "paired [95% CI]",
             "sketch ms", "hash+seal ms", "append ms", "parts");
  for (auto& r : rs) {
    const double parts = r.sketch_s + r.hash_s + r.seal_s + r.append_s;
    fmt::print(row, r.name, fmt::format("{:.2f}M", r.params / 1e6),
               fmt::format("{:.3f}", r.plain_s), fmt::format("{:.3f}", r.witnessed_s),
               fmt::format("{:+.2f}%", 100 * (r.witnessed_s / r.plain_s - 1)),
               fmt::format("{:+.2f}% [{:+.1f}, {:+.1f}]", 100 * (r.pair_ratio - 1),
                           100 * (r.pair_lo - 1), 100 * (r.pair_hi - 1)),
               fmt::format("{:.2f} ({:.3f}%)", 1e3 * r.sketch_s, 100 * r.sketch_s / r.plain_s),
               fmt::format("{:.3f}", 1e3 * (r.hash_s + r.seal_s)),
               fmt::format("{:.3f} ({:.3f}%)", 1e3 * r.append_s, 100 * r.append_s / r.plain_s),
               fmt::format("{:.3f}%", 100 * parts / r.plain_s));
  }
  fmt::print("\n");
  for (auto& r : rs) {
    const double parts = (r.sketch_s + r.hash_s + r.seal_s + r.append_s) / r.plain_s;
    const double sketch = r.sketch_s / r.plain_s;
    // The A/B comparison decides only when its interval is clear of the target; the parts,
    // timed directly, are far below the step's noise and decide otherwise.
    const double lo = r.pair_lo - 1, hi = r.pair_hi - 1;
    const char* ab = hi <= r.target  ? "met"
                     : lo > r.target ? "MISSED"
                                     : "not resolved by the noise";
    fmt::print(
        "{}: overhead <= {:.0f} %: sum of the parts timed alone {:.3f} % {}; A/B {:+.2f} % "
        "[{:+.1f}, {:+.1f}] {}\n",
        r.name, 100 * r.target, 100 * parts, parts <= r.target ? "met" : "MISSED",
        100 * (r.pair_ratio - 1), 100 * lo, 100 * hi, ab);
    fmt::print("{}: sketch < 0.5 % of the step: {:.3f} % {}\n", r.name, 100 * sketch,
               sketch < 0.005 ? "met" : "MISSED");
  }
}

}  // namespace

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  fs::path data = "data/kjv";
  int pairs = 40, large_pairs = 3;
  uint64_t log_rows = 20480;  // 20 chunks of the steps table exactly
  std::string only, name = "config";
  // --config FILE [--set k=v ...]: one config of your own (its train.device and precision too)
  // instead of the built-in pair; --target is its overhead target (fraction, default 0.01).
  fs::path config;
  std::vector<std::string> sets;
  double target = 0.01;
  // --nondeterministic 1: torch's deterministic algorithms off after start-up pinned them, to
  // price determinism (never for a run that is to be verified).
  bool nondeterministic = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--data")
      data = argv[i + 1];
    else if (a == "--pairs")
      pairs = std::stoi(argv[i + 1]);
    else if (a == "--large-pairs")
      large_pairs = std::stoi(argv[i + 1]);
    else if (a == "--log-rows")
      log_rows = std::stoull(argv[i + 1]);
    else if (a == "--only")
      only = argv[i + 1];
    else if (a == "--config")
      config = argv[i + 1];
    else if (a == "--set")
      sets.push_back(argv[i + 1]);
    else if (a == "--name")
      name = argv[i + 1];
    else if (a == "--target")
      target = std::stod(argv[i + 1]);
    else if (a == "--nondeterministic")
      nondeterministic = std::string(argv[i + 1]) == "1";
  }
  auto want = [&only](const char* part) { return only.empty() || only == part; };
  try {
    if (!only.empty() && !want("log") && !want("tiny") && !want("124m"))
      throw std::runtime_error("--only takes log, tiny or 124m, not " + only);
    if (pairs < 1 || large_pairs < 1 || log_rows < 1)
      throw std::runtime_error("--pairs, --large-pairs and --log-rows need at least 1");
    data = wit::bench::prepared_dataset(data);
    wit::set_compute_threads(1);
    wit::keep_freed_memory();
    const fs::path configs = fs::path(WIT_SOURCE_DIR) / "configs";
    const auto ds = wit::data::Dataset::open(data);
    std::vector<Result> rs;
    if (!config.empty()) {
      const Run run = load(config, sets, data);
      if (nondeterministic) at::globalContext().setDeterministicAlgorithms(false, false);
      rs.push_back(measure(name, run, ds, pairs, target));
      print_table(rs);
      const Result& r = rs.front();
      fmt::print("json: {}\n",
                 nlohmann::json{{"name", r.name}, {"params", r.params}, {"plain_s", r.plain_s},
                                {"witnessed_s", r.witnessed_s}, {"pair_ratio", r.pair_ratio},
                                {"pair_lo", r.pair_lo}, {"pair_hi", r.pair_hi},
                                {"sketch_s", r.sketch_s}, {"hash_s", r.hash_s},
                                {"seal_s", r.seal_s}, {"append_s", r.append_s}, {"pairs", pairs},
                                {"sketch_ops_s", r.sketch_ops_s ? nlohmann::json(*r.sketch_ops_s)
                                                                : nlohmann::json()}}
                     .dump());
      return 0;
    }
    const Run tiny = load(configs / "tiny.yaml", {}, data);
    if (want("log")) log_size(tiny, ds.manifest(), log_rows);
    if (want("tiny")) rs.push_back(measure("tiny", tiny, ds, pairs, 0.03));
    if (want("124m")) {
      const Run large =
          load(configs / "gpt2-124m.yaml",
               {"data.seq_len=64", "train.micro_batches=1", "train.micro_batch_size=32"}, data);
      rs.push_back(measure("124M-shaped (T=64, b=32)", large, ds, large_pairs, 0.01));
    }
    if (!rs.empty()) print_table(rs);
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_witness: error: {}\n", e.what());
    return 1;
  }
}
