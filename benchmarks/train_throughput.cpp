// Trainer throughput on one CPU thread against the machine's own matmul rate, in one run:
// model FLOP/s of the real training step (the function `wit train` calls) at the tiny config
// and at a 124M-shaped config, each as a fraction of a 1024^3 fp32 matmul's FLOP/s.
// The machine is shared and its clock drifts, so each timed step is bracketed by matmul
// measurements and compared with their mean; the median ratio over the steps is reported.
//
//   build/benchmarks/wit_bench_train [--data data/kjv] [--steps 3]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "benchmarks/bench_data.h"
#include "core/config.h"
#include "trainer/data/dataset.h"
#include "trainer/data/prepare.h"
#include "record/run_config.h"
#include "trainer/runtime.h"
#include "trainer/run_plan.h"
#include "trainer/step.h"
#include "trainer/cpu_numerics.h"
#include "trainer/peak_flops.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Result {
  std::string name;
  double params, tokens_per_step, step_s, flops_per_s, matmul, ratio;  // medians over steps
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Result measure(const std::string& name, const fs::path& config, std::vector<std::string> sets,
               const fs::path& data_dir, int steps) {
  sets.push_back("train.threads=1");
  sets.insert(sets.begin(), "train.device=cpu");  // the CPU step against the CPU's matmul rate
  wit::bench::BenchRun run(config, sets, data_dir);
  const wit::RunConfig& rc = run.rc;
  const wit::RunPlan& plan = run.plan;
  auto& layout = run.layout;
  wit::train_step(*layout, plan.context());  // warm-up: allocations, first-touch
  const double tokens = double(rc.tokens_per_step());
  const double flops_per_step = wit::model::gpt_flops_per_token(rc.model, rc.data.seq_len) * tokens;
  std::vector<double> secs, rates, refs, ratios;
  for (int i = 0; i < steps; ++i) {
    const double before = wit::measure_matmul_flops(5);
    auto t0 = Clock::now();
    wit::train_step(*layout, plan.context());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    const double after = wit::measure_matmul_flops(5);
    const double ref = (before + after) / 2;
    fmt::print("  {} step {}: {:.3f} s, {:.1f} model GFLOP/s, matmul {:.1f} / {:.1f} GFLOP/s\n",
               name, i + 1, s, flops_per_step / s / 1e9, before / 1e9, after / 1e9);
    std::fflush(stdout);
    secs.push_back(s);
    rates.push_back(flops_per_step / s);
    refs.push_back(ref);
    ratios.push_back(flops_per_step / s / ref);
  }
  return {
      name,          double(layout->num_params()), tokens, median(secs), median(rates), median(refs),
      median(ratios)};
}

}  // namespace

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  fs::path data = "data/kjv";
  int steps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--data")
      data = argv[i + 1];
    else if (a == "--steps")
      steps = std::stoi(argv[i + 1]);
  }
  try {
    data = wit::bench::prepared_dataset(data);
    wit::set_compute_threads(1);
    wit::keep_freed_memory();
    const fs::path configs = fs::path(WIT_SOURCE_DIR) / "configs";
    std::vector<Result> rs;
    rs.push_back(measure("tiny", configs / "tiny.yaml", {}, data, steps));
    rs.push_back(measure("124M-shaped (T=64, b=32)", configs / "gpt2-124m.yaml",
                         {"data.seq_len=64", "train.micro_batches=1", "train.micro_batch_size=32"},
                         data, steps));
    fmt::print("\n{:<26} {:>10} {:>12} {:>8} {:>12} {:>12} {:>7}\n", "config", "params",
               "tokens/step", "step s", "model GF/s", "matmul GF/s", "ratio");
    for (auto& r : rs)
      fmt::print("{:<26} {:>9.2f}M {:>12.0f} {:>8.3f} {:>12.1f} {:>12.1f} {:>6.1f}%\n", r.name,
                 r.params / 1e6, r.tokens_per_step, r.step_s, r.flops_per_s / 1e9, r.matmul / 1e9,
                 100 * r.ratio);
    fmt::print("\ntargets: tiny >= 50%, 124M-shaped >= 75% of the matmul rate\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_train: error: {}\n", e.what());
    return 1;
  }
}
