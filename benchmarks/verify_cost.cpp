// What `wit verify` costs against what training cost, in one process on one thread. A run is
// trained with `wit::train` (its log records every step's seconds), verified with `verify_run`
// replaying every step (each a segment of its own, so that the progress lines time each step),
// then trained again: the same steps bit for bit, so the replay is compared with the mean of the
// trainings just before and after it, which cancels a steady drift of this shared machine's
// clock. The verification also gives a
// checkpoint load (read and hash check), the data audit per step and the fixed part (reading
// the log, the initialisation, the final model and evaluation); the closing state hash of a
// segment is timed alone. In units of the trainer's step these give verification's share of
// training compute at 10^3..10^6 steps for c = challenges_for(1 %, 99 %) draws: a table and a
// plot.
//
//   build/benchmarks/wit_bench_verify [--data data/kjv] [--only tiny|124m] [--out-png FILE] ...
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "apps/wit/plot.h"
#include "benchmarks/bench_data.h"
#include "benchmarks/bench_timing.h"
#include "trainer/checkpoint.h"
#include "trainer/dist/communicator.h"
#include "trainer/train_loop.h"
#include "record/reader.h"
#include "record/signing.h"
#include "verify/verify.h"
#include "trainer/cpu_numerics.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using wit::bench::median;
using wit::bench::secs_since;

const char* kUsage = R"(wit_bench_verify: what `wit verify` costs against what training cost.

Trains small runs in-process (tiny, and the 124M-shaped model at a small batch), verifies every
step of each, and prints replay speed against the trainer's, the cost of a checkpoint load,
the data audit per step, and verification's share of training compute at 10^3..10^6 steps for
f = 1 %, 99 % confidence.

Options:
  --data DIR          prepared dataset (default data/kjv; if absent, the built-in corpus)
  --only tiny|124m    measure one config only
  --steps N           tiny: steps per run (default 10)
  --every K           tiny: checkpoint every K steps (default 5)
  --rounds R          tiny: rounds of verify, then train again (default 3)
  --large-steps N     124M-shaped: steps per run (default 6)
  --large-every K     124M-shaped: checkpoint every K steps (default 2)
  --large-rounds R    124M-shaped: rounds (default 1)
  --large-batch B     124M-shaped: micro_batch_size (default 8; one micro-batch)
  --large-seq T       124M-shaped: data.seq_len (default 64)
  --work DIR          where the runs are written (default: the system temp dir; removed after)
  --out-png FILE      plot of verification cost against run length (default: no plot)
  --help              this text
)";

// A fresh directory, removed with the object.
struct TempDir {
  fs::path path;
  explicit TempDir(const fs::path& parent)
      : path(parent / fmt::format("wit-bench-verify-{}", getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct Setup {
  std::string name;
  fs::path config;
  std::vector<std::string> sets;
  int64_t steps, every;
  int rounds;
  int log_every;
};

// A trained run and its trainer's figures, from the log.
struct Trained {
  fs::path dir;
  double params = 0, tokens = 0, wall = 0;
  std::vector<double> step_s;  // each step's seconds
  double mean() const {
    return std::accumulate(step_s.begin(), step_s.end(), 0.0) / double(step_s.size());
  }
};

Trained train_run(const Setup& s, const fs::path& data, const fs::path& dir, const fs::path& key,
                  const std::string& what) {
  wit::TrainOptions t;
  t.config = s.config;
  t.overrides = s.sets;
  t.overrides.push_back("data.dir=" + data.string());
  t.overrides.push_back(fmt::format("train.steps={}", s.steps));
  t.overrides.push_back(fmt::format("train.checkpoint_every={}", s.every));
  t.overrides.push_back(fmt::format("train.log_every={}", s.log_every));
  t.run_dir = dir;
  t.key = key;
  fmt::print("{}: training {} steps, a checkpoint every {} ({})\n", s.name, s.steps, s.every, what);
  std::fflush(stdout);
  const auto t0 = Clock::now();
  wit::train(t);
  Trained r;
  r.dir = dir;
  r.wall = secs_since(t0);
  const auto log = wit::witness::read_log(dir / wit::witness::kLogFileName);
  for (auto& row : log.tables.steps) r.step_s.push_back(row.timing.seconds);
  r.params = double(log.meta.num_params);
  r.tokens = double(log.tables.steps.front().fields.tokens);
  return r;
}

// One round's figures (seconds unless named).
struct Round {
  double params = 0, tokens = 0;
  int64_t steps = 0, every = 0;
  // The trainer's mean step, over the runs trained just before and just after the verification
  // (the same steps, bit for bit), which cancels a steady drift of the clock.
  double step_mean = 0;
  double before = 0, after = 0;  // the two runs' means
  double replay_mean = 0;        // verifier, every step of the run
  // Per step: medians of the trainer's steps (both runs) and of the replayed ones, and the
  // median over steps of trainer ÷ replay (step i against the mean of the two runs' step i).
  double step_median = 0, replay_median = 0, paired = 0;
  // Each replayed step but the last (which also recomputes the final fingerprint and val loss), from
  // one progress line to the next, less the state hash where the step closes a segment.
  std::vector<double> replay_steps;
  double load = 0;  // one checkpoint load with its hash check
  int64_t loads = 0;
  // Per segment, in the run: the challenge stage less its steps, its loads and the final
  // evaluation it repeats (the closing state hash, the first segment's init, fingerprints).
  double segment_rest = 0;
  double state_hash = 0;  // the closing state hash timed alone: what the model charges a segment
  double audit_per_step = 0;
  double fixed = 0;  // everything not per step or per segment (the init and fingerprints included)
  double train_wall = 0, verify_wall = 0;
  double ratio() const { return step_mean / replay_mean; }  // replay steps/s ÷ trainer's
};

// Verifies the run replaying every step, each as a segment of its own (in order, so one
// initialisation and no load: the progress line before each step times it).
Round verify_round(const Setup& s, const Trained& t, const fs::path& data,
                   const wit::witness::PublicKey& pub, int round) {
  Round r;
  r.params = t.params;
  r.tokens = t.tokens;
  r.steps = int64_t(t.step_s.size());
  r.every = s.every;
  r.train_wall = t.wall;
  wit::witness::VerifyOptions o;
  o.run = t.dir;
  o.data = data;
  o.segment = 1;
  o.challenges = 1000;  // 1000 draws cover every one of a few dozen steps
  o.seed = 1;
  o.trusted_key = pub;
  auto comm = wit::dist::make_single_process();
  // From the progress lines: each replayed step's start, the ends of the challenge, model and
  // evaluation stages.
  std::vector<Clock::time_point> starts;
  Clock::time_point challenges_done{}, model_done{}, eval_done{};
  fmt::print("{} round {}/{}: verifying every step\n", s.name, round, s.rounds);
  std::fflush(stdout);
  auto t0 = Clock::now();
  const auto rep = wit::witness::verify_run(o, *comm, [&](const std::string& line) {
    const auto now = Clock::now();
    if (line.rfind("  replaying", 0) == 0) {
      starts.push_back(now);
      if (starts.size() % size_t(s.every) != 1 && s.every > 1) return;  // one line a segment
    }
    if (line.rfind("challenges", 0) == 0) challenges_done = now;
    if (line.rfind("model", 0) == 0) model_done = now;
    if (line.rfind("evaluation", 0) == 0) eval_done = now;
    fmt::print("  verify: {}\n", line);
    std::fflush(stdout);
  });
  r.verify_wall = secs_since(t0);
  if (!rep.certified) throw std::runtime_error("the run was not certified: " + rep.reason);
  if (rep.cost.replayed_steps != uint64_t(r.steps) || starts.size() != size_t(r.steps))
    throw std::runtime_error(
        fmt::format("{} of {} steps replayed: raise the draws", rep.cost.replayed_steps, r.steps));
  auto secs = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const auto& c = rep.cost;
  r.replay_mean = c.replay_seconds / double(c.replayed_steps);
  r.before = t.mean();
  r.loads = c.loads;
  r.load = c.load_seconds / double(std::max<int64_t>(c.loads, 1));

  // The closing check alone: the state hash over parameters and both AdamW moments.
  const auto P = int64_t(r.params);
  const auto p = torch::rand({P}), m = torch::rand({P}), v = torch::rand({P});
  t0 = Clock::now();
  const auto h = wit::state_hash(wit::Digest{}, 1, p, m, v);
  r.state_hash = secs_since(t0);
  (void)h;

  for (size_t i = 0; i + 1 < starts.size(); ++i)
    r.replay_steps.push_back(secs(starts[i], starts[i + 1]) -
                             ((i + 1) % size_t(s.every) == 0 ? r.state_hash : 0.0));
  // The last segment recomputes the final val loss (the log has it at the last step), as the
  // evaluation stage does again: once a run, not once a segment.
  const double stage = secs(starts.front(), challenges_done), eval = secs(model_done, eval_done);
  // One of the loads is the model stage's (the last checkpoint), outside the challenge stage.
  const double seg_loads = r.load * double(std::max<int64_t>(c.loads - 1, 0));
  const double segments = double((r.steps + s.every - 1) / s.every);
  r.segment_rest = (stage - c.replay_seconds - seg_loads - eval) / segments;
  r.audit_per_step = c.audit_seconds / double(r.steps);
  r.fixed =
      c.total_seconds - c.audit_seconds - c.replay_seconds - seg_loads - r.state_hash * segments;
  return r;
}

// Completes a round with the run trained after it and reports it.
void close_round(Round& r, const Setup& s, const Trained& before, const Trained& after, int round) {
  const auto& replay_steps = r.replay_steps;
  r.after = after.mean();
  r.step_mean = (r.before + r.after) / 2;
  std::vector<double> both = before.step_s, paired;
  both.insert(both.end(), after.step_s.begin(), after.step_s.end());
  r.step_median = median(both);
  r.replay_median = median(replay_steps);
  for (size_t i = 0; i < replay_steps.size(); ++i)
    paired.push_back((before.step_s[i] + after.step_s[i]) / 2 / replay_steps[i]);
  r.paired = median(paired);
  fmt::print(
      "{} round {}/{}: trainer {:.3f} s/step (runs before and after: {:.3f}, {:.3f}), replay "
      "{:.3f} s/step: {:.3f}x the trainer's steps/s ({:.3f}x, {:.3f}x against each); per-step "
      "medians {:.3f} and {:.3f} s ({:.3f}x), paired per-step median {:.3f}x; load {:.3f} s "
      "({:.3f} steps); rest of a segment in the run {:.3f} s (closing state hash alone {:.3f} "
      "s); audit {:.3f} ms/step; fixed {:.2f} s; wall: train {:.1f} s, verify {:.1f} s\n",
      s.name, round, s.rounds, r.step_mean, r.before, r.after, r.replay_mean, r.ratio(),
      r.before / r.replay_mean, r.after / r.replay_mean, r.step_median, r.replay_median,
      r.step_median / r.replay_median, r.paired, r.load, r.load / r.step_mean, r.segment_rest,
      r.state_hash, 1e3 * r.audit_per_step, r.fixed, r.train_wall, r.verify_wall);
  std::fflush(stdout);
}

// The medians over rounds, field by field.
Round summarise(const std::vector<Round>& rs) {
  auto med = [&rs](double Round::*f) {
    std::vector<double> v;
    for (auto& r : rs) v.push_back(r.*f);
    return median(v);
  };
  Round m = rs.front();
  for (double Round::*f :
       {&Round::step_mean, &Round::step_median, &Round::replay_median, &Round::paired, &Round::load,
        &Round::segment_rest, &Round::state_hash, &Round::audit_per_step, &Round::fixed,
        &Round::train_wall, &Round::verify_wall})
    m.*f = med(f);
  // The ratio is the median of the rounds' ratios; keep the two times consistent with it.
  std::vector<double> ratios;
  for (auto& r : rs) ratios.push_back(r.ratio());
  m.replay_mean = m.step_mean / median(ratios);
  return m;
}

// Verification's share of training compute for n steps, a checkpoint every k, c draws:
// E distinct segments of S = n/k, each k replayed steps, a load and the closing hash; the
// audit of every step; the fixed part. Units of the trainer's step time.
struct Share {
  double segments, expected, fraction;
};
Share share(const Round& r, double n, double k, int64_t c) {
  const double S = n / k;
  const double E = S * (1 - std::pow(1 - 1 / S, double(c)));
  const double per_segment = k * r.replay_mean + r.load + r.state_hash;
  return {S, E, (E * per_segment + n * r.audit_per_step + r.fixed) / (n * r.step_mean)};
}

void print_table(const Round& r, const std::string& name, int64_t c) {
  fmt::print("\nverification / training compute, {} figures, f = 1 %, 99 % confidence (c = {})\n",
             name, c);
  fmt::print("{:>10} | {:>28} | {:>28} | {:>28}\n", "steps n", "k = 10", "k = 100", "k = 1000");
  for (double n : {1e3, 1e4, 1e5, 1e6}) {
    fmt::print("{:>10}", fmt::format("10^{:.0f}", std::log10(n)));
    for (double k : {10.0, 100.0, 1000.0}) {
      const Share s = share(r, n, k, c);
      fmt::print(" | {:>28}", fmt::format("{:.0f} of {:.0f} seg: {:.2f} %", s.expected, s.segments,
                                          100 * s.fraction));
    }
    fmt::print("\n");
  }
}

void plot(const fs::path& png, const Round& r, const std::string& name, int64_t c) {
  std::vector<wit::cli::PlotSeries> series;
  for (double k : {10.0, 100.0, 1000.0}) {
    wit::cli::PlotSeries s{fmt::format("checkpoint every {:.0f} steps", k), {}, {}, false};
    for (int i = 0; i <= 60; ++i) {
      const double x = 3 + i * 0.05, n = std::pow(10.0, x);
      if (n < k) continue;
      s.x.push_back(x);
      s.y.push_back(100 * share(r, n, k, c).fraction);
    }
    series.push_back(s);
  }
  wit::cli::write_line_plot(
      png,
      {fmt::format("wit verify at f = 1 %, 99 % confidence (c = {}), {} figures", c, name),
       "log10(steps)", "% of training compute"},
      series);
  fmt::print("wrote {}\n", png.string());
}

}  // namespace

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  fs::path data = "data/kjv", work = fs::temp_directory_path(), png;
  std::string only;
  Setup tiny{"tiny", {}, {}, 10, 5, 3, 5};
  Setup large{"124M-shaped", {}, {}, 6, 2, 1, 1};
  int large_batch = 8, large_seq = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "wit_bench_verify: {} needs a value (see --help)\n", a);
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--data")
      data = v;
    else if (a == "--only")
      only = v;
    else if (a == "--steps")
      tiny.steps = std::stoll(v);
    else if (a == "--every")
      tiny.every = std::stoll(v);
    else if (a == "--rounds")
      tiny.rounds = std::stoi(v);
    else if (a == "--large-steps")
      large.steps = std::stoll(v);
    else if (a == "--large-every")
      large.every = std::stoll(v);
    else if (a == "--large-rounds")
      large.rounds = std::stoi(v);
    else if (a == "--large-batch")
      large_batch = std::stoi(v);
    else if (a == "--large-seq")
      large_seq = std::stoi(v);
    else if (a == "--work")
      work = v;
    else if (a == "--out-png")
      png = v;
    else {
      fmt::print(stderr, "wit_bench_verify: unknown option {} (see --help)\n", a);
      return 2;
    }
  }
  try {
    if (!only.empty() && only != "tiny" && only != "124m")
      throw std::runtime_error("--only takes tiny or 124m, not " + only);
    for (const Setup* s : {&tiny, &large})
      if (s->steps < 2 || s->every < 1 || s->every >= s->steps || s->rounds < 1)
        throw std::runtime_error(
            "steps need at least 2, a checkpoint interval below them, rounds at least 1");
    const auto began = Clock::now();
    data = wit::bench::prepared_dataset(data);
    const fs::path configs = fs::path(WIT_SOURCE_DIR) / "configs";
    // One thread, as the other benchmarks; one val batch, evaluated only at the end: the steps
    // are what is compared.
    const std::vector<std::string> common = {"train.threads=1", "train.eval_every=0",
                                             "train.eval_batches=1"};
    tiny.config = configs / "tiny.yaml";
    tiny.sets = common;
    large.config = configs / "gpt2-124m.yaml";
    large.sets = common;
    for (const std::string& set :
         {fmt::format("data.seq_len={}", large_seq), std::string("train.micro_batches=1"),
          fmt::format("train.micro_batch_size={}", large_batch)})
      large.sets.push_back(set);
    large.name = fmt::format("124M-shaped (T={}, b={}, M=1)", large_seq, large_batch);

    TempDir dir(work);
    const fs::path key = dir.path / "signing-key.pem";
    const auto k = wit::witness::SigningKey::generate();
    k.save(key);
    const auto pub = k.public_key();
    const int64_t c = wit::witness::challenges_for(0.01, 0.99);

    std::vector<std::pair<std::string, Round>> results;
    for (Setup* s : {&tiny, &large}) {
      if (!only.empty() && (s == &tiny) != (only == "tiny")) continue;
      // A first short run warms the heap (the trainer keeps freed memory), so that the
      // trainer's first step is no colder than the verifier's.
      fmt::print("{}: warm-up run (one step)\n", s->name);
      wit::TrainOptions t;
      t.config = s->config;
      t.overrides = s->sets;
      t.overrides.push_back("data.dir=" + data.string());
      t.overrides.push_back("train.steps=1");
      t.run_dir = dir.path / "warm-up";
      t.key = key;
      t.quiet = true;
      wit::train(t);
      fs::remove_all(t.run_dir);
      // Train, verify, train the same steps again: each verification sits between two
      // trainings of what it replays.
      std::vector<Round> rounds;
      Trained before = train_run(*s, data, dir.path / "run-0", key, "before round 1");
      for (int i = 1; i <= s->rounds; ++i) {
        Round r = verify_round(*s, before, data, pub, i);
        fs::remove_all(before.dir);
        const Trained after = train_run(*s, data, dir.path / fmt::format("run-{}", i), key,
                                        fmt::format("after round {}", i));
        close_round(r, *s, before, after, i);
        rounds.push_back(r);
        before = after;
      }
      fs::remove_all(before.dir);
      results.emplace_back(s->name, summarise(rounds));
    }

    // Steps: the trainer's and the replay's mean (median) seconds, and replay steps/s ÷ the
    // trainer's from the sums (from the medians; the paired per-step median). Load: seconds (in
    // trainer steps). Close: the state hash alone (the rest of a segment as seen in the run).
    fmt::print("\n{:<30} {:>8} {:>6} {:>5} {:>16} {:>16} {:>21} {:>15} {:>14} {:>8} {:>7}\n",
               "config", "params", "tokens", "n/k", "trainer s/step", "replay s/step",
               "replay/trainer", "load s (steps)", "close s (run)", "audit ms", "fixed s");
    for (auto& [name, r] : results)
      fmt::print("{:<30} {:>8} {:>6} {:>5} {:>16} {:>16} {:>21} {:>15} {:>14} {:>8.3f} {:>7.2f}\n",
                 name, fmt::format("{:.2f}M", r.params / 1e6), r.tokens,
                 fmt::format("{}/{}", r.steps, r.every),
                 fmt::format("{:.3f} ({:.3f})", r.step_mean, r.step_median),
                 fmt::format("{:.3f} ({:.3f})", r.replay_mean, r.replay_median),
                 fmt::format("{:.3f} ({:.3f}; {:.3f})", r.ratio(), r.step_median / r.replay_median,
                             r.paired),
                 fmt::format("{:.3f} ({:.3f})", r.load, r.load / r.step_mean),
                 fmt::format("{:.3f} ({:.3f})", r.state_hash, r.segment_rest),
                 1e3 * r.audit_per_step, r.fixed);
    fmt::print("\n");
    for (auto& [name, r] : results) {
      fmt::print(
          "{}: replay at {:.3f}x the trainer's steps/s (per-step medians {:.3f}x, paired "
          "{:.3f}x; target >= 0.9x): {}\n",
          name, r.ratio(), r.step_median / r.replay_median, r.paired,
          r.ratio() >= 0.9 ? "met" : "MISSED");
      fmt::print(
          "{}: a checkpoint load ({:.2f} GB, hash checked) {:.3f} s = {:.3f} of a training step "
          "(target <= 1): {}\n",
          name, 12 * r.params / 1e9, r.load, r.load / r.step_mean,
          r.load <= r.step_mean ? "met" : "MISSED");
    }
    for (auto& [name, r] : results) print_table(r, name, c);
    if (!png.empty()) plot(png, results.back().second, results.back().first, c);
    fmt::print("\ntotal {:.0f} s\n", secs_since(began));
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_verify: error: {}\n", e.what());
    return 1;
  }
}
