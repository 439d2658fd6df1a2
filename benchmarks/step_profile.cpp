// Where one training step's time goes, from libtorch's profiler (Kineto) around the real step
// (`train_step`, witnessing on, as `wit train` runs it), after warm-up steps:
//   on a GPU   every kernel, copy and memset the device ran (name, count, seconds), the time the
//              device was busy at all (the union of those intervals) against the wall time, and
//              the CUDA runtime calls the host made (kernel launches, synchronisations, copies);
//   on a CPU   every ATen operation's self time (its time minus the operations it called).
// Both are also given by part of the step (trainer/step.cpp labels them: batch, forward_backward,
// gradients, loss, norm_clip, adamw, sketch, seal): an operation belongs to the part whose span
// holds its start, a kernel to the part of the operation that launched it (the profiler's
// correlation), whichever thread ran it (the backward runs on autograd's device thread).
// Busy time well below wall time means the device waited for the host (launches, host reads);
// busy time near wall time means the kernels themselves are the cost. Per-step figures, in a
// "json: {...}" line that benchmarks/profile_table.py puts beside the PyTorch reference's
// profile (benchmarks/torch_reference.py --profile) by kind of work.
//
//   build/benchmarks/wit_bench_step_profile [--data DIR] [--config FILE] [--set KEY=VALUE ...]
//       [--warmup 2] [--steps 3] [--trace FILE.json]
//   (default: configs/gpt2-124m.yaml at T = 64, 2 micro-batches of 2 sequences; --trace writes
//   the profiler's Chrome trace, for chrome://tracing or Perfetto)
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/bench_data.h"
#include "benchmarks/bench_timing.h"
#include "core/config.h"
#include "trainer/compute.h"
#include "trainer/cpu_numerics.h"
#include "trainer/runtime.h"
#include "trainer/step.h"

namespace {

namespace fs = std::filesystem;
namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;

struct Span {
  uint64_t begin, end;
};

struct Totals {
  int64_t count = 0;
  uint64_t ns = 0;
};

// Rows sorted by time, largest first, per step.
nlohmann::json rows(const std::map<std::string, Totals>& by_name, int steps) {
  std::vector<std::pair<std::string, Totals>> v(by_name.begin(), by_name.end());
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second.ns > b.second.ns; });
  nlohmann::json out = nlohmann::json::array();
  for (auto& [name, t] : v)
    out.push_back({{"name", name},
                   {"count", double(t.count) / steps},
                   {"s", 1e-9 * double(t.ns) / steps}});
  return out;
}

// Length of the union of the spans (the time at least one of them ran).
uint64_t covered_ns(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  uint64_t total = 0, open_begin = 0, open_end = 0;
  bool open = false;
  for (const Span& s : spans) {
    if (open && s.begin <= open_end) {
      open_end = std::max(open_end, s.end);
      continue;
    }
    if (open) total += open_end - open_begin;
    open_begin = s.begin, open_end = s.end, open = true;
  }
  if (open) total += open_end - open_begin;
  return total;
}

struct Op {
  std::string name;
  uint64_t begin = 0, self_ns = 0;
};

// Self time of nested operations on one thread: each one's span minus its direct children's.
void add_self_times(std::vector<std::pair<Span, std::string>> ops, std::vector<Op>& out) {
  std::sort(ops.begin(), ops.end(), [](auto& a, auto& b) {
    return a.first.begin != b.first.begin ? a.first.begin < b.first.begin
                                          : a.first.end > b.first.end;  // parent first
  });
  struct Open {
    size_t index;
    uint64_t children_ns = 0;
  };
  std::vector<Open> stack;
  auto close = [&](const Open& o) {
    const Span& s = ops[o.index].first;
    const uint64_t span = s.end - s.begin;
    out.push_back({ops[o.index].second, s.begin, span > o.children_ns ? span - o.children_ns : 0});
    if (stack.size() > 1) stack[stack.size() - 2].children_ns += span;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    while (!stack.empty() && ops[stack.back().index].first.end <= ops[i].first.begin) {
      close(stack.back());
      stack.pop_back();
    }
    stack.push_back({i});
  }
  while (!stack.empty()) {
    close(stack.back());
    stack.pop_back();
  }
}

// The step's parts in time order (user scopes wit::step::<part>); they follow one another.
class Parts {
 public:
  static constexpr const char* kPrefix = "wit::step::";
  static bool is_part(const std::string& name) { return name.rfind(kPrefix, 0) == 0; }
  void add(const std::string& name, Span s) { spans_.push_back({s, name.substr(std::strlen(kPrefix))}); }
  void sort() {
    std::sort(spans_.begin(), spans_.end(), [](auto& a, auto& b) { return a.first.begin < b.first.begin; });
  }
  // The part running at time t, or "outside the parts".
  std::string at(uint64_t t) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), t,
                               [](uint64_t v, const auto& s) { return v < s.first.begin; });
    if (it == spans_.begin()) return kOutside;
    --it;
    return t < it->first.end ? it->second : kOutside;
  }
  static constexpr const char* kOutside = "outside the parts";

 private:
  std::vector<std::pair<Span, std::string>> spans_;
};

}  // namespace

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  fs::path data = "data/kjv";
  fs::path config = fs::path(WIT_SOURCE_DIR) / "configs" / "gpt2-124m.yaml";
  fs::path trace;
  int warmup = 2, steps = 3;
  std::vector<std::string> sets = {"data.seq_len=64", "model.context=64", "train.micro_batches=2",
                                   "train.micro_batch_size=2"};
  const char* usage =
      "usage: wit_bench_step_profile [--data DIR] [--config FILE] [--set KEY=VALUE ...] "
      "[--warmup N] [--steps N] [--trace FILE.json]";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      fmt::print(
          "Profiles --steps training steps (witnessing on) after --warmup ones: per step, the\n"
          "device's kernels and busy time (on a GPU), the runtime calls, the operations' self\n"
          "time, and each part of the step; ends with a \"json: \" line for profile_table.py.\n"
          "Defaults: configs/gpt2-124m.yaml at T = 64, 2 micro-batches of 2, 2 warm-up and 3\n"
          "profiled steps; --trace writes the Chrome trace.\n{}\n",
          usage);
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "wit_bench_step_profile: error: {} without a value ({})\n", a, usage);
      return 2;
    }
    const std::string v = argv[++i];
    try {
      if (a == "--data") data = v;
      else if (a == "--config") config = v;
      else if (a == "--set") sets.push_back(v);
      else if (a == "--trace") trace = v;
      else if (a == "--warmup") warmup = std::stoi(v);
      else if (a == "--steps") steps = std::stoi(v);
      else {
        fmt::print(stderr, "wit_bench_step_profile: error: unknown argument {} ({})\n", a, usage);
        return 2;
      }
    } catch (const std::logic_error&) {
      fmt::print(stderr, "wit_bench_step_profile: error: {} {}: expected a whole number\n", a, v);
      return 2;
    }
  }
  if (warmup < 0 || steps < 1) {
    fmt::print(stderr, "wit_bench_step_profile: error: --warmup must be >= 0 and --steps >= 1\n");
    return 2;
  }
  try {
    sets.push_back("train.threads=1");
    wit::set_compute_threads(1);
    wit::bench::BenchRun run(config, sets, wit::bench::prepared_dataset(data));
    const wit::Compute& compute = run.compute;
    const wit::RunConfig& rc = run.rc;
    wit::Layout& layout = *run.layout;
    wit::StepContext ctx = run.plan.context();
    ctx.witness = true;

    for (int i = 0; i < warmup; ++i) wit::train_step(layout, ctx);
    wit::synchronize(compute);
    std::set<ActivityType> activities = {ActivityType::CPU};
    if (compute.is_cuda()) activities.insert(ActivityType::CUDA);
    const torch::profiler::impl::ProfilerConfig kineto(torch::profiler::impl::ProfilerState::KINETO);
    prof::prepareProfiler(kineto, activities);  // Kineto sets up its trace before it starts
    prof::enableProfiler(kineto, activities);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) wit::train_step(layout, ctx);
    wit::synchronize(compute);
    const double wall_s = wit::bench::secs_since(t0);
    auto result = prof::disableProfiler();

    std::map<std::string, Totals> device, runtime, ops, device_parts, host_parts;
    std::vector<Span> device_spans;
    std::map<uint64_t, std::vector<std::pair<Span, std::string>>> host_by_thread;
    // Correlation id to start: the operations' (torch's ids) and the runtime calls' (CUPTI's).
    std::map<uint64_t, uint64_t> op_at, call_at;
    Parts parts;
    for (const auto& e : result->events()) {
      const Span s{e.startNs(), e.endNs()};
      if (s.end < s.begin || e.deviceType() != c10::DeviceType::CPU) continue;
      host_by_thread[e.startThreadId()].push_back({s, e.name()});
      if (e.correlationId() > 0)
        (e.name().rfind("cu", 0) == 0 ? call_at : op_at)[e.correlationId()] = s.begin;
      if (Parts::is_part(e.name())) parts.add(e.name(), s);
    }
    parts.sort();
    for (const auto& e : result->events()) {  // kernels, copies, memsets on the device
      const Span s{e.startNs(), e.endNs()};
      if (s.end < s.begin || e.deviceType() == c10::DeviceType::CPU) continue;
      auto& t = device[e.name()];
      t.count += 1;
      t.ns += s.end - s.begin;
      device_spans.push_back(s);
      // The operation that launched it (as torch.profiler links them), else its runtime call.
      std::optional<uint64_t> launched;
      if (auto op = op_at.find(e.linkedCorrelationId()); op != op_at.end()) launched = op->second;
      else if (auto call = call_at.find(e.correlationId()); call != call_at.end()) launched = call->second;
      auto& p = device_parts[launched ? parts.at(*launched) : Parts::kOutside];
      p.count += 1;
      p.ns += s.end - s.begin;
    }
    // Runtime calls (cudaLaunchKernel, ...) nest inside the operations that make them: they
    // count in neither's self time twice, and are reported apart.
    std::vector<Op> host;
    for (auto& [thread, list] : host_by_thread) add_self_times(std::move(list), host);
    for (const Op& o : host) {
      auto& t = (o.name.rfind("cu", 0) == 0 ? runtime : ops)[o.name];
      t.count += 1;
      t.ns += o.self_ns;
      auto& p = host_parts[parts.at(o.begin)];
      p.count += 1;
      p.ns += o.self_ns;
    }
    if (!trace.empty()) result->save(trace.string());

    const nlohmann::json j = {
        {"source", "wit"},
        {"config", config.filename().string()},
        {"device", compute.is_cuda() ? "cuda" : "cpu"},
        {"precision", compute.bf16 ? "bf16" : "fp32"},
        {"attention", compute.attention},
        {"micro_batches", rc.train.micro_batches},
        {"micro_batch_size", rc.train.micro_batch_size},
        {"seq_len", rc.data.seq_len},
        {"steps", steps},
        {"wall_s", wall_s / steps},
        {"device_busy_s", compute.is_cuda() ? nlohmann::json(1e-9 * double(covered_ns(device_spans)) / steps)
                                            : nlohmann::json()},
        {"kernels", rows(device, steps)},
        {"runtime", rows(runtime, steps)},
        {"ops", rows(ops, steps)},
        {"parts", rows(compute.is_cuda() ? device_parts : host_parts, steps)}};
    fmt::print("{}: {} layers, {} micro-batches of {} x {} tokens on {} ({}), {} steps profiled\n",
               config.filename().string(), rc.model.n_layer, rc.train.micro_batches,
               rc.train.micro_batch_size, rc.data.seq_len, compute.device.str(),
               compute.bf16 ? "bf16" : "fp32", steps);
    fmt::print("wall time per step {:.4f} s", wall_s / steps);
    if (compute.is_cuda())
      fmt::print(", device busy {:.4f} s ({:.0f} %)", j["device_busy_s"].get<double>(),
                 100 * j["device_busy_s"].get<double>() / (wall_s / steps));
    fmt::print("\n");
    const auto& top = compute.is_cuda() ? j["kernels"] : j["ops"];
    fmt::print("\nper step, largest first ({}):\n", compute.is_cuda() ? "device kernels and copies"
                                                                      : "ATen operations, self time");
    for (size_t i = 0; i < top.size() && i < 15; ++i)
      fmt::print("  {:>9.4f} s {:>8.0f}x  {}\n", top[i]["s"].get<double>(),
                 top[i]["count"].get<double>(), top[i]["name"].get<std::string>().substr(0, 100));
    fmt::print("\nper step, by part of the step ({}):\n",
               compute.is_cuda() ? "kernel time" : "operations' self time");
    for (const auto& r : j["parts"])
      fmt::print("  {:>9.4f} s {:>8.0f}x  {}\n", r["s"].get<double>(), r["count"].get<double>(),
                 r["name"].get<std::string>());
    if (!trace.empty()) fmt::print("\ntrace: {}\n", trace.string());
    fmt::print("json: {}\n", j.dump());
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_step_profile: error: {}\n", e.what());
    return 1;
  }
}
