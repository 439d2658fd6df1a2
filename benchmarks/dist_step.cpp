// One process of a distributed-training benchmark, run under mpirun: times the real step of the
// chosen layout (replicated DDP or sharded FSDP), the time spent inside collectives, and the
// peak resident memory, and prints one JSON line (rank 0) with every rank's figures.
// With --save FILE it instead measures a checkpoint save of the freshly initialised state: rank
// 0's resident memory before it and its peak during it (the peak is reset just before).
//
//   mpirun -np 2 build/benchmarks/wit_bench_dist_step --mode fsdp --data data/kjv --steps 3
//     --set model.n_layer=12 --set model.n_embd=1024 ...
//   mpirun -np 2 build/benchmarks/wit_bench_dist_step --mode fsdp --save /tmp/s.ckpt ...
// benchmarks/dist_scaling.sh runs the comparisons of docs/benchmarks.md.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config.h"
#include "trainer/data/dataset.h"
#include "trainer/dist/mpi_communicator.h"
#include "trainer/layout.h"
#include "trainer/run_plan.h"
#include "record/run_config.h"
#include "trainer/runtime.h"
#include "trainer/cpu_numerics.h"

namespace {

using Clock = std::chrono::steady_clock;

// Forwards to a communicator and adds up the wall time spent in each collective.
class TimedCommunicator final : public wit::dist::Communicator {
 public:
  explicit TimedCommunicator(wit::dist::Communicator& inner) : c_(inner) {}
  double seconds = 0;
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  std::string backend() const override { return c_.backend(); }
  void reduce_scatter_canonical(float* d, int64_t n) override {
    time([&] { c_.reduce_scatter_canonical(d, n); });
  }
  void reduce_scatter_canonical_v(float* d, const std::vector<int64_t>& c) override {
    time([&] { c_.reduce_scatter_canonical_v(d, c); });
  }
  void all_gather(float* d, int64_t n) override {
    time([&] { c_.all_gather(d, n); });
  }
  void all_gather_v(const float* m, float* a, const std::vector<int64_t>& c) override {
    time([&] { c_.all_gather_v(m, a, c); });
  }
  void all_gather_bytes(const void* m, size_t b, void* a) override {
    time([&] { c_.all_gather_bytes(m, b, a); });
  }
  void send(const void* d, size_t b, int to) override {
    time([&] { c_.send(d, b, to); });
  }
  void recv(void* d, size_t b, int from) override {
    time([&] { c_.recv(d, b, from); });
  }
  void broadcast(void* d, size_t b, int root) override {
    time([&] { c_.broadcast(d, b, root); });
  }
  void barrier() override {
    time([&] { c_.barrier(); });
  }
  void abort(int code) override { c_.abort(code); }

 private:
  template <typename F>
  void time(F&& f) {
    auto t0 = Clock::now();
    f();
    seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  wit::dist::Communicator& c_;
};

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) * 1024.0;  // Linux reports KiB
}

// A field of /proc/self/status in bytes (VmRSS: resident now; VmHWM: peak since the last reset).
double proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024.0;
  return 0;
}

// Resets this process's peak resident size (VmHWM) to its current size.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  std::string mode = "ddp", data = "data/kjv", save;
  int steps = 3;
  std::vector<std::string> sets;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mode")
      mode = argv[i + 1];
    else if (a == "--data")
      data = argv[i + 1];
    else if (a == "--steps")
      steps = std::stoi(argv[i + 1]);
    else if (a == "--set")
      sets.push_back(argv[i + 1]);
    else if (a == "--save")
      save = argv[i + 1];
  }
  auto world = wit::dist::make_communicator();
  TimedCommunicator comm(*world);
  try {
    sets.push_back("data.dir=" + data);
    sets.push_back("dist.mode=" + mode);
    const auto cfg = wit::config::Config::parse("{}", "benchmark", wit::run_schema(), sets);
    const auto rc = wit::run_config_from(cfg);
    wit::set_compute_threads(int(rc.train.threads));
    wit::keep_freed_memory();
    const auto ds = wit::data::Dataset::open(rc.data.dir);
    const wit::RunPlan plan(rc, ds);
    auto layout = wit::make_layout(rc.dist_mode, rc.model, rc.train.micro_batches, comm);
    layout->init(1);
    if (!save.empty()) {
      comm.barrier();
      const double before = proc_status_bytes("VmRSS");
      reset_peak_rss();
      const auto t0 = Clock::now();
      layout->save(save, wit::CheckpointInfo{0, layout->num_params(), {}, {}});
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      const double peak = proc_status_bytes("VmHWM");
      comm.barrier();
      if (comm.is_root()) {
        std::remove(save.c_str());
        fmt::print("{}\n", nlohmann::json{{"mode", layout->name()},
                                          {"world", comm.size()},
                                          {"params", layout->num_params()},
                                          {"state_bytes_per_rank", layout->state_bytes()},
                                          {"rank0_rss_before_save_bytes", before},
                                          {"rank0_peak_rss_during_save_bytes", peak},
                                          {"save_s", secs}}
                                .dump());
      }
      return 0;
    }
    wit::train_step(*layout, plan.context());  // warm-up
    std::vector<double> step_s, comm_s;
    for (int i = 0; i < steps; ++i) {
      comm.barrier();
      comm.seconds = 0;
      auto t0 = Clock::now();
      wit::train_step(*layout, plan.context());
      step_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      comm_s.push_back(comm.seconds);
    }
    std::sort(step_s.begin(), step_s.end());
    std::sort(comm_s.begin(), comm_s.end());
    const double mine[3] = {peak_rss_bytes(), step_s[step_s.size() / 2], comm_s[comm_s.size() / 2]};
    std::vector<double> all(3 * size_t(comm.size()));
    comm.all_gather_bytes(mine, sizeof mine, all.data());
    if (comm.is_root()) {
      nlohmann::json j = {{"mode", layout->name()},
                          {"world", comm.size()},
                          {"params", layout->num_params()},
                          {"state_bytes_per_rank", layout->state_bytes()},
                          {"tokens_per_step", rc.tokens_per_step()}};
      double step = 0, comm_time = 0, rss = 0;
      for (int r = 0; r < comm.size(); ++r) {
        rss = std::max(rss, all[3 * size_t(r)]);
        step = std::max(step, all[3 * size_t(r) + 1]);
        comm_time = std::max(comm_time, all[3 * size_t(r) + 2]);
      }
      j["peak_rss_bytes_max_rank"] = rss;
      j["step_s"] = step;
      j["comm_s"] = comm_time;
      j["tokens_per_s"] = double(rc.tokens_per_step()) / step;
      fmt::print("{}\n", j.dump());
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_dist_step: error (rank {}): {}\n", comm.rank(), e.what());
    if (comm.size() > 1) comm.abort(1);
    return 1;
  }
  return 0;
}
