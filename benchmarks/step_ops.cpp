// The ATen operations one training step issues, counted through libtorch's RecordFunction hooks
// while the real step (the function `wit train` calls) runs. On a GPU every kernel-shaped
// operation (one that is not a view and calls no other kernel-shaped one) is a kernel launch,
// and every host read makes the host wait for the device: Tensor::item
// (aten::_local_scalar_dense) and wit's own copies to the host (wit::to_host, trainer/host_read.h).
// The counts are a property of the step's code, not of the hardware, so the CPU build measures
// them. Then the same for the step's arithmetic as a GPU runs it (trainer/device_ops.h: AdamW,
// the gradient norm, the weight sketch), run here on CPU tensors of the step's sizes: the CPU
// step calls plain loops instead; they are also timed on one CPU thread, which measures the
// memory they move, not their GPU time. Last, the loss of one micro-batch's bf16 logits as a GPU
// computes it, ATen's and the fused cross-entropy's, with the bytes of their kernels' operands.
// Work on the GPU step (fused kernels, CUDA graphs, no host waits inside the step) shows here as
// smaller counts, with the same bits.
//
//   build/benchmarks/wit_bench_step_ops [--data DIR] [--config FILE] [--set KEY=VALUE ...]
//   (default: configs/gpt2-124m.yaml at T = 64, 2 micro-batches of 2 sequences; the counts do
//   not depend on the widths, only on the layers and micro-batches)
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/record_function.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "benchmarks/bench_data.h"
#include "benchmarks/bench_timing.h"
#include "trainer/cpu_numerics.h"
#include "trainer/device_ops.h"
#include "trainer/model/bias_gelu.h"
#include "trainer/model/cross_entropy.h"
#include "trainer/model/layer_norm.h"
#include "trainer/runtime.h"
#include "trainer/step.h"

namespace {

namespace fs = std::filesystem;

// Operations by name: all of them; those called from no other operation (top level); and the
// kernel-shaped ones: ATen operations that are not views, metadata or no-ops and call no other
// kernel-shaped operation, which on a GPU launch a kernel each.
struct Counts {
  std::mutex mu;
  bool want_bytes = false;
  int64_t bytes = 0;  // kernel-shaped operations' tensor operands, inputs and outputs, when wanted
  std::map<std::string, int64_t> all, top, kernels;
  std::map<std::string, std::map<std::string, int64_t>> callers;  // kernel -> its caller's name
  // Counted as kernels though they call one: operations whose CPU form calls a kernel-shaped one
  // only to zero a scratch buffer, where a GPU runs their own kernels (set per count, before the
  // hooks).
  std::set<std::string> whole;
  // Counted as one kernel with their own operands, and what they call not at all: operations
  // whose CPU form makes a temporary a GPU's one kernel does without (the CPU's mixed-precision
  // add widens its bf16 operand into an fp32 copy first).
  std::set<std::string> fold;
};
Counts counts;
thread_local int folding = 0;  // fold operations in flight
thread_local std::vector<bool> below_kernel;  // per operation in flight: called a kernel-shaped one
thread_local std::vector<std::string> in_flight;  // names of the operations in flight

bool is_view_or_metadata(const std::string& name) {
  static const std::set<std::string> views = {
      "aten::alias",      "aten::as_strided", "aten::chunk",        "aten::detach",
      "aten::empty",      "aten::empty_like", "aten::empty_strided", "aten::expand",
      "aten::narrow",     "aten::permute",    "aten::reshape",      "aten::_reshape_alias",
      "aten::resize_",    "aten::select",     "aten::slice",        "aten::split",
      "aten::squeeze",    "aten::t",          "aten::transpose",    "aten::unsqueeze",
      "aten::unsafe_view", "aten::_unsafe_view", "aten::view",      "aten::lift_fresh",
      "aten::resolve_conj", "aten::resolve_neg", "aten::to",        "aten::contiguous"};
  return views.count(name) > 0;
}

// The step's parts (user scopes wit::step::*, trainer/step.cpp) only label what runs inside
// them: not counted, and transparent to the nesting.
bool is_step_part(const std::string& name) { return name.rfind("wit::step::", 0) == 0; }

// wit's own kernels (wit::kernel::*, e.g. the fused cross-entropy's) are one launch each.
bool is_kernel_shaped(const std::string& name) {
  return (name.rfind("aten::", 0) == 0 && !is_view_or_metadata(name)) ||
         name.rfind("wit::kernel::", 0) == 0;
}

int64_t tensor_bytes(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() ? int64_t(v.toTensor().nbytes()) : 0;
  int64_t n = 0;
  if (v.isTensorList())
    for (const at::Tensor& t : v.toTensorList().vec()) n += t.defined() ? int64_t(t.nbytes()) : 0;
  return n;
}

// The bytes an operation's input (or output) tensors hold: what it reads and writes if it touches
// each once. An in-place operation's tensor counts as read and written, except the destination of
// a copy or fill, which is only written. Inputs can be read only when the operation starts.
int64_t bytes_of(c10::ArrayRef<const c10::IValue> values) {
  int64_t n = 0;
  for (const auto& v : values) n += tensor_bytes(v);
  return n;
}
int64_t input_bytes_of(const at::RecordFunction& fn) {
  static const std::set<std::string> writes_self = {"aten::copy_", "aten::fill_", "aten::zero_"};
  const auto in = fn.inputs();
  if (writes_self.count(fn.name()) && !in.empty()) return bytes_of(in.slice(1));
  return bytes_of(in);
}
thread_local std::vector<int64_t> input_bytes;  // per operation in flight, when bytes are wanted

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  const std::string name = fn.name();
  if (is_step_part(name)) return nullptr;
  {
    std::lock_guard<std::mutex> lock(counts.mu);
    counts.all[name] += 1;
    if (below_kernel.empty()) counts.top[name] += 1;
  }
  if (counts.fold.count(name)) ++folding;
  below_kernel.push_back(false);
  in_flight.push_back(name);
  input_bytes.push_back(counts.want_bytes ? input_bytes_of(fn) : 0);
  return nullptr;
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext*) {
  const std::string name = fn.name();
  if (is_step_part(name)) return;
  const bool above = below_kernel.back();
  below_kernel.pop_back();
  in_flight.pop_back();
  const int64_t in_bytes = input_bytes.back();
  input_bytes.pop_back();
  const bool fold = counts.fold.count(name) > 0;
  if (fold) --folding;
  const bool kernel = fold || (folding == 0 && (!above || counts.whole.count(name) > 0) &&
                               is_kernel_shaped(name));
  if (kernel) {
    // The two nearest callers that are not views, nearest first ("aten::clone < aten::contiguous"
    // would be a view's; autograd's nodes name the backward of an operation).
    std::string caller;
    int depth = 0;
    for (auto it = in_flight.rbegin(); it != in_flight.rend() && depth < 2; ++it)
      if (!is_view_or_metadata(*it) || *it == "aten::contiguous") {
        caller += (depth++ ? " < " : "") + *it;
      }
    if (caller.empty()) caller = "(called directly)";
    std::lock_guard<std::mutex> lock(counts.mu);
    counts.kernels[name] += 1;
    counts.callers[name][caller] += 1;
    if (counts.want_bytes) counts.bytes +=
          in_bytes + bytes_of(c10::ArrayRef<const c10::IValue>(fn.outputs().data(), fn.outputs().size()));
  }
  if ((kernel || above) && !below_kernel.empty()) below_kernel.back() = true;
}

int64_t total(const std::map<std::string, int64_t>& m) {
  int64_t n = 0;
  for (auto& [name, c] : m) n += c;
  return n;
}

struct Tally {
  int64_t kernels = 0, top = 0, all = 0, reads = 0, bytes = 0;
};

// Runs `fn` with the hooks on; what it issued (and with `bytes`, its operands' bytes).
template <class Fn>
Tally count_ops(Fn&& fn, bool bytes = false, std::set<std::string> whole = {},
                std::set<std::string> fold = {}) {
  {
    std::lock_guard<std::mutex> lock(counts.mu);
    counts.whole = std::move(whole);
    counts.fold = std::move(fold);
    counts.all.clear();
    counts.top.clear();
    counts.kernels.clear();
    counts.callers.clear();
    counts.want_bytes = bytes;
    counts.bytes = 0;
  }
  const auto handle = at::addGlobalCallback(
      at::RecordFunctionCallback(on_enter, on_exit)
          .needsInputs(bytes)
          .needsOutputs(bytes)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  fn();
  at::removeCallback(handle);
  std::lock_guard<std::mutex> lock(counts.mu);
  return {total(counts.kernels), total(counts.top), total(counts.all),
          counts.all["aten::_local_scalar_dense"] + counts.all["wit::to_host"], counts.bytes};
}

// Median wall time of three calls.
template <class Fn>
double median_seconds(Fn&& fn) {
  std::vector<double> s;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    s.push_back(wit::bench::secs_since(t0));
  }
  return wit::bench::median(s);
}

// The loss of one micro-batch's logits, forward and backward, as a GPU computes it under bf16:
// the head's matmul gives bf16 logits; ATen's loss runs on an fp32 copy (autocast's cast for
// log-softmax, written out here: the CPU has no CUDA autocast), the fused one on the logits.
std::pair<Tally, Tally> cross_entropy_tallies(const wit::RunConfig& rc) {
  const int64_t rows = rc.train.micro_batch_size * rc.data.seq_len, V = rc.model.vocab_size;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  const auto logits = (torch::randn({rows, V}, gen) * 2).to(torch::kBFloat16);
  const auto targets = torch::randint(0, V, {rows}, gen);
  auto loss = [&](bool fused) {
    auto x = logits.detach().requires_grad_();
    const wit::model::Loss l =
        fused ? wit::model::fused_cross_entropy_mean(x, targets)
              : wit::model::cross_entropy_mean(x.to(torch::kFloat32), targets);
    l.objective.backward();
  };
  loss(false), loss(true);  // warm-up
  return {count_ops([&] { loss(false); }, true), count_ops([&] { loss(true); }, true)};
}

// One layer norm of a micro-batch's residual stream, forward and backward, as a GPU computes it
// under bf16: libtorch's writes fp32 rows that autocast casts to bf16 for the next matmul (the
// cast written out here), and takes that matmul's bf16 gradient back through the cast; the fused
// one writes bf16 rows and reads the bf16 gradient. With `add`, a block's second layer norm: the
// bf16 branch added to the fp32 stream in front, the sum also used after the block (its gradient
// from there summed with the layer norm's, and cast to bf16 for the branch).
std::pair<Tally, Tally> layer_norm_tallies(const wit::RunConfig& rc, bool add) {
  const int64_t rows = rc.train.micro_batch_size * rc.data.seq_len, C = rc.model.n_embd;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(2);
  const auto x0 = torch::randn({rows, C}, gen), dsum = torch::randn({rows, C}, gen);
  const auto br0 = torch::randn({rows, C}, gen).to(torch::kBFloat16);
  const auto dy = torch::randn({rows, C}, gen).to(torch::kBFloat16);
  const auto w0 = torch::randn({C}, gen), b0 = torch::randn({C}, gen);
  auto norm = [&](bool fused) {
    auto x = x0.detach().requires_grad_(), br = br0.detach().requires_grad_(),
         w = w0.detach().requires_grad_(), b = b0.detach().requires_grad_();
    torch::Tensor sum, h;
    if (fused && add) {
      std::tie(sum, h) = wit::model::fused_add_layer_norm(x, br, w, b, torch::kBFloat16);
    } else {
      const torch::Tensor in = add ? (sum = x + br) : x;
      h = fused ? wit::model::fused_layer_norm(in, w, b, torch::kBFloat16)
                : torch::layer_norm(in, {C}, w, b, 1e-5).to(torch::kBFloat16);
    }
    if (add)
      torch::autograd::backward({sum, h}, {dsum, dy});
    else
      h.backward(dy);
  };
  norm(false), norm(true);  // warm-up
  // The CPU's layer-norm backward zeroes a scratch buffer for its weight gradients first.
  return {count_ops([&] { norm(false); }, true, {"aten::native_layer_norm_backward"}),
          count_ops([&] { norm(true); }, true)};
}

// The MLP's bias and GELU for one micro-batch (rows x 4C), forward and backward, as a GPU computes
// it under bf16: ATen's matmul adds the bias in its epilogue (not counted: the matmul is the same
// either way), libtorch's GELU reads its bf16 output, and the backward's GELU gradient is read
// again for the bias's (linear's backward sums it over rows); the fused form reads the matmul's
// bias-free output and the fp32 bias, and sums the bias's gradient in the pass that writes the
// rows'.
std::pair<Tally, Tally> gelu_tallies(const wit::RunConfig& rc) {
  const int64_t rows = rc.train.micro_batch_size * rc.data.seq_len, F = 4 * rc.model.n_embd;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const auto h0 = torch::randn({rows, F}, gen).to(torch::kBFloat16);
  const auto dy = torch::randn({rows, F}, gen).to(torch::kBFloat16);
  const auto b0 = torch::randn({F}, gen) * 0.1;
  auto mlp = [&](bool fused) {
    auto h = h0.detach().requires_grad_();
    if (fused) {
      auto b = b0.detach().requires_grad_();
      wit::model::fused_bias_gelu(h, b).backward(dy);
    } else {
      torch::gelu(h, "tanh").backward(dy);
      h.grad().sum(0);  // the bias's gradient, as linear's backward takes it
    }
  };
  mlp(false), mlp(true);  // warm-up
  // The CPU's sum zeroes its output before its loop; a GPU's reduction is one kernel.
  return {count_ops([&] { mlp(false); }, true, {}, {"aten::sum"}),
          count_ops([&] { mlp(true); }, true)};
}

}  // namespace

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  fs::path data = "data/kjv";
  fs::path config = fs::path(WIT_SOURCE_DIR) / "configs" / "gpt2-124m.yaml";
  std::vector<std::string> sets = {"train.device=cpu", "data.seq_len=64", "model.context=64",
                                   "train.micro_batches=2", "train.micro_batch_size=2"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fmt::print(
          "usage: wit_bench_step_ops [--data DIR] [--config FILE] [--set KEY=VALUE ...]\n"
          "Counts the ATen operations of one training step (kernel launches on a GPU), "
          "where they come from, and the host reads; then the GPU forms of AdamW, the "
          "gradient norm and the weight sketch on the step's sizes, and the optimizer's "
          "fused kernels (optim.kernels=fused) beside libtorch's operations; a step under bf16 "
          "autocast with the weights cast each use or once a step; then the loss's "
          "kernels and operand bytes, ATen's and the fused cross-entropy's, and a layer "
          "norm's, ATen's and the fused one's.\n"
          "Default: configs/gpt2-124m.yaml at T = 64, 2 micro-batches of 2 sequences, on "
          "data/kjv.\n");
      return 0;
    }
    if ((a == "--data" || a == "--config" || a == "--set") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--data") data = v;
      if (a == "--config") config = v;
      if (a == "--set") sets.push_back(v);
    } else {
      fmt::print(stderr,
                 "wit_bench_step_ops: error: unknown argument {} (usage: wit_bench_step_ops "
                 "[--data DIR] [--config FILE] [--set KEY=VALUE ...])\n",
                 a);
      return 2;
    }
  }
  try {
    wit::set_compute_threads(1);
    wit::bench::BenchRun run(config, sets, wit::bench::prepared_dataset(data));
    const wit::RunConfig& rc = run.rc;
    wit::train_step(*run.layout, run.plan.context());  // warm-up: first calls are not the step's
    const Tally step = count_ops([&] { wit::train_step(*run.layout, run.plan.context()); });
    fmt::print("{}: {} layers, {} micro-batches of {} x {} tokens\n", config.filename().string(),
               rc.model.n_layer, rc.train.micro_batches, rc.train.micro_batch_size,
               rc.data.seq_len);
    fmt::print("one step: {} kernel-shaped ATen operations; {} top-level operations ({} in all, "
               "nested included); {} host reads (Tensor::item and wit::to_host)\n",
               step.kernels, step.top, step.all, step.reads);
    std::vector<std::pair<int64_t, std::string>> most;
    for (auto& [name, c] : counts.kernels) most.push_back({c, name});
    std::sort(most.rbegin(), most.rend());
    fmt::print("\nthe most frequent kernel-shaped operations:\n");
    for (size_t i = 0; i < most.size() && i < 15; ++i) {
      fmt::print("  {:>7}  {}\n", most[i].first, most[i].second);
      // Where they come from: the callers issuing most of them.
      std::vector<std::pair<int64_t, std::string>> by;
      for (auto& [caller, c] : counts.callers[most[i].second]) by.push_back({c, caller});
      std::sort(by.rbegin(), by.rend());
      for (size_t k = 0; k < by.size() && k < 6; ++k)
        fmt::print("  {:>7}    from {}\n", by[k].first, by[k].second);
    }

    // The GPU path's arithmetic on the same sizes (copies: the run's state is not touched).
    wit::Layout& L = *run.layout;
    const int64_t n = L.local_count();
    auto p = L.local_params().clone(), m = L.optimizer().m.clone(), v = L.optimizer().v.clone();
    const auto g = p * 1e-3;
    const auto segments = L.local_segments();
    const wit::optim::Hyper h{1e-3f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
    wit::adamw_update_by_ops(p, g, m, v, n, segments, 1, h);  // warm-up (builds what it keeps)
    const Tally adamw =
        count_ops([&] { wit::adamw_update_by_ops(p, g, m, v, n, segments, 2, h); }, true);
    const Tally norm = count_ops([&] { wit::grad_norm_partials_by_ops(g, n); }, true);
    // optim.kernels = fused: one kernel each (on CPU tensors the loops, counted as that kernel;
    // its one host read of the partials is a GPU's only).
    const Tally adamw_fused =
        count_ops([&] { wit::adamw_update_fused(p, g, m, v, n, segments, 2, h); }, true);
    const Tally norm_fused = count_ops([&] { wit::grad_norm_partials_fused(g, n); }, true);
    const Tally sketch = count_ops([&] { wit::sketch_weights_by_ops(p.narrow(0, 0, n), 0); }, true);
    // The sketch's kernel (on CPU tensors the definition's loop, counted as that kernel).
    const Tally sketch_fused =
        count_ops([&] { wit::sketch_weights_fused(p.narrow(0, 0, n), 0); }, true);
    // Their time here, on one CPU thread: a measure of the memory they move, not a GPU figure.
    const double adamw_s = median_seconds([&] { wit::adamw_update_by_ops(p, g, m, v, n, segments, 3, h); });
    const double norm_s = median_seconds([&] { wit::grad_norm_partials_by_ops(g, n); });
    const double sketch_s = median_seconds([&] { wit::sketch_weights_by_ops(p.narrow(0, 0, n), 0); });
    fmt::print("\nthe step's arithmetic as a GPU runs it ({} parameters, {} decay segments):\n", n,
               segments.size());
    fmt::print("  {:<38} {:>8} {:>11} {:>16}\n", "", "kernels", "host reads", "CPU s (1 thread)");
    fmt::print("  {:<38} {:>8} {:>11} {:>16.3f}\n", "AdamW update", adamw.kernels, adamw.reads, adamw_s);
    fmt::print("  {:<38} {:>8} {:>11} {:>16.3f}\n", "gradient norm partials", norm.kernels, norm.reads,
               norm_s);
    fmt::print("  {:<38} {:>8} {:>11} {:>16.3f}\n", "weight sketch (every witnessed step)",
               sketch.kernels, sketch.reads, sketch_s);
    const double adamw_fused_s =
        median_seconds([&] { wit::adamw_update_fused(p, g, m, v, n, segments, 3, h); });
    const double norm_fused_s = median_seconds([&] { wit::grad_norm_partials_fused(g, n); });
    auto per_param = [&](const Tally& t) { return double(t.bytes) / double(n); };
    fmt::print(
        "\nthe optimizer's two parts as a GPU runs them, by optim.kernels (operand bytes "
        "per parameter):\n");
    fmt::print("  {:<38} {:>8} {:>16} {:>16}\n", "", "kernels", "bytes/parameter",
               "CPU s (1 thread)");
    fmt::print("  {:<38} {:>8} {:>16.1f} {:>16.3f}\n", "AdamW update, ops", adamw.kernels,
               per_param(adamw), adamw_s);
    fmt::print("  {:<38} {:>8} {:>16.1f} {:>16.3f}\n", "AdamW update, fused", adamw_fused.kernels,
               per_param(adamw_fused), adamw_fused_s);
    fmt::print("  {:<38} {:>8} {:>16.1f} {:>16.3f}\n", "gradient norm partials, ops", norm.kernels,
               per_param(norm), norm_s);
    fmt::print("  {:<38} {:>8} {:>16.1f} {:>16.3f}\n", "gradient norm partials, fused",
               norm_fused.kernels, per_param(norm_fused), norm_fused_s);
    const double sketch_fused_s =
        median_seconds([&] { wit::sketch_weights_fused(p.narrow(0, 0, n), 0); });
    fmt::print("\nthe weight sketch as a GPU runs it (operand bytes per parameter):\n");
    fmt::print("  {:<38} {:>8} {:>16} {:>16}\n", "", "kernels", "bytes/parameter",
               "CPU s (1 thread)");
    fmt::print("  {:<38} {:>8} {:>16.1f} {:>16.3f}\n", "weight sketch, torch operations",
               sketch.kernels, per_param(sketch), sketch_s);
    fmt::print("  {:<38} {:>8} {:>16.1f} {:>16.3f}\n", "weight sketch, its kernel",
               sketch_fused.kernels, per_param(sketch_fused), sketch_fused_s);
    // One step as a GPU issues it under bf16 autocast (the CPU's autocast writes the casts out;
    // the attention is the math one): autocast casting the matmuls' weights in every
    // micro-batch, against the step's bf16 copies made once a step (trainer/step.cpp).
    // With `fused`, also every fused model key, as their CPU forms (each kernel one launch).
    auto autocast_step = [&](bool once, bool fused = false) {
      wit::Compute c = run.compute;
      c.bf16 = true;
      c.bf16_weights_once = once;
      wit::model::GPTConfig m = rc.model;
      if (fused) m.cross_entropy = m.layer_norm = m.gelu = "fused";
      auto layout = wit::make_layout("ddp", m, rc.train.micro_batches, *run.comm, c);
      layout->init(1);
      wit::train_step(*layout, run.plan.context());  // warm-up
      return count_ops([&] { wit::train_step(*layout, run.plan.context()); }, true, {},
                       {"aten::add_"});
    };
    const Tally cast_each = autocast_step(false), cast_once = autocast_step(true),
                all_fused = autocast_step(true, true);
    fmt::print(
        "\none step under bf16 autocast (the CPU's autocast, math attention; each add_ one "
        "kernel), {} micro-batches:\n",
        rc.train.micro_batches);
    fmt::print("  {:<38} {:>8} {:>16}\n", "", "kernels", "operand GB");
    fmt::print("  {:<38} {:>8} {:>16.2f}\n", "weights cast by autocast, each use",
               cast_each.kernels, double(cast_each.bytes) / 1e9);
    fmt::print("  {:<38} {:>8} {:>16.2f}\n", "weights cast once a step", cast_once.kernels,
               double(cast_once.bytes) / 1e9);
    fmt::print("  {:<38} {:>8} {:>16.2f}\n", "once a step, fused CE, LN and GELU",
               all_fused.kernels, double(all_fused.bytes) / 1e9);
    const auto [aten_ce, fused_ce] = cross_entropy_tallies(rc);
    const int64_t rows = rc.train.micro_batch_size * rc.data.seq_len;
    // Operand bytes are linear in the rows: per row, and for a GPU micro-batch of 16 x 1024.
    auto gb_at_16k = [&](const Tally& t) { return double(t.bytes) / double(rows) * 16384 / 1e9; };
    fmt::print("\nthe loss of one micro-batch's bf16 logits ({} rows x {}), forward and "
               "backward, as a GPU computes it under bf16 autocast:\n",
               rows, rc.model.vocab_size);
    fmt::print("  {:<38} {:>8} {:>16} {:>22}\n", "", "kernels", "operand bytes/row",
               "GB at 16 x 1024 rows");
    fmt::print("  {:<38} {:>8} {:>16} {:>22.2f}\n", "ATen (model.cross_entropy=ops)",
               aten_ce.kernels, aten_ce.bytes / rows, gb_at_16k(aten_ce));
    fmt::print("  {:<38} {:>8} {:>16} {:>22.2f}\n", "fused (model.cross_entropy=fused)",
               fused_ce.kernels, fused_ce.bytes / rows, gb_at_16k(fused_ce));
    const auto [aten_ln, fused_ln] = layer_norm_tallies(rc, /*add=*/false);
    fmt::print("\none layer norm of a micro-batch's residual stream ({} rows x {}), forward and "
               "backward, as a GPU computes it under bf16 autocast (the fused backward's one "
               "scope is three launches):\n",
               rows, rc.model.n_embd);
    fmt::print("  {:<38} {:>8} {:>16} {:>22}\n", "", "kernels", "operand bytes/row",
               "GB at 16 x 1024 rows");
    fmt::print("  {:<38} {:>8} {:>16} {:>22.3f}\n", "ATen (model.layer_norm=ops)", aten_ln.kernels,
               aten_ln.bytes / rows, gb_at_16k(aten_ln));
    fmt::print("  {:<38} {:>8} {:>16} {:>22.3f}\n", "fused (model.layer_norm=fused)",
               fused_ln.kernels, fused_ln.bytes / rows, gb_at_16k(fused_ln));
    const auto [aten_add, fused_add] = layer_norm_tallies(rc, /*add=*/true);
    fmt::print("  {:<38} {:>8} {:>16} {:>22.3f}\n", "ATen, residual add in front", aten_add.kernels,
               aten_add.bytes / rows, gb_at_16k(aten_add));
    fmt::print("  {:<38} {:>8} {:>16} {:>22.3f}\n", "fused, residual add in front",
               fused_add.kernels, fused_add.bytes / rows, gb_at_16k(fused_add));
    const auto [aten_gelu, fused_gelu] = gelu_tallies(rc);
    fmt::print("\nthe MLP's bias and GELU for a micro-batch ({} rows x {}), forward and backward, "
               "as a GPU computes it under bf16 autocast (the fused backward's one scope is two "
               "launches; the CPU's sum, one GPU reduction, is counted as one kernel):\n",
               rows, 4 * rc.model.n_embd);
    fmt::print("  {:<38} {:>8} {:>16} {:>22}\n", "", "kernels", "operand bytes/row",
               "GB at 16 x 1024 rows");
    fmt::print("  {:<38} {:>8} {:>16} {:>22.3f}\n", "ATen (model.gelu=ops)", aten_gelu.kernels,
               aten_gelu.bytes / rows, gb_at_16k(aten_gelu));
    fmt::print("  {:<38} {:>8} {:>16} {:>22.3f}\n", "fused (model.gelu=fused)", fused_gelu.kernels,
               fused_gelu.bytes / rows, gb_at_16k(fused_gelu));
    fmt::print(
        "json: {{\"config\": \"{}\", \"n_layer\": {}, \"micro_batches\": {}, "
        "\"kernel_ops\": {}, \"top_level_ops\": {}, \"all_ops\": {}, \"host_reads\": {}, "
        "\"device_adamw\": [{}, {}, {:.4f}], \"device_norm\": [{}, {}, {:.4f}], "
        "\"device_sketch\": [{}, {}, {:.4f}], \"cross_entropy_aten\": [{}, {}], "
        "\"cross_entropy_fused\": [{}, {}], \"layer_norm_aten\": [{}, {}], "
        "\"layer_norm_fused\": [{}, {}], \"add_layer_norm_aten\": [{}, {}], "
        "\"add_layer_norm_fused\": [{}, {}], \"optimizer_bytes_per_param\": {{\"adamw_ops\": "
        "{:.1f}, \"adamw_fused\": {:.1f}, \"norm_ops\": {:.1f}, \"norm_fused\": {:.1f}}}, "
        "\"device_adamw_fused\": [{}, {:.4f}], \"device_norm_fused\": [{}, {:.4f}], "
        "\"sketch_bytes_per_param\": {{\"ops\": {:.1f}, \"kernel\": {:.1f}}}, "
        "\"device_sketch_kernel\": [{}, {:.4f}], \"autocast_step_cast_each\": [{}, {}], "
        "\"autocast_step_cast_once\": [{}, {}], \"autocast_step_all_fused\": [{}, {}], "
        "\"gelu_aten\": [{}, {}], "
        "\"gelu_fused\": [{}, {}]}}\n",
        config.filename().string(), rc.model.n_layer, rc.train.micro_batches, step.kernels,
        step.top, step.all, step.reads, adamw.kernels, adamw.reads, adamw_s, norm.kernels,
        norm.reads, norm_s, sketch.kernels, sketch.reads, sketch_s, aten_ce.kernels,
        aten_ce.bytes / rows, fused_ce.kernels, fused_ce.bytes / rows, aten_ln.kernels,
        aten_ln.bytes / rows, fused_ln.kernels, fused_ln.bytes / rows, aten_add.kernels,
        aten_add.bytes / rows, fused_add.kernels, fused_add.bytes / rows, per_param(adamw),
        per_param(adamw_fused), per_param(norm), per_param(norm_fused), adamw_fused.kernels,
        adamw_fused_s, norm_fused.kernels, norm_fused_s, per_param(sketch), per_param(sketch_fused),
        sketch_fused.kernels, sketch_fused_s, cast_each.kernels, cast_each.bytes, cast_once.kernels,
        cast_once.bytes, all_fused.kernels, all_fused.bytes, aten_gelu.kernels,
        aten_gelu.bytes / rows, fused_gelu.kernels, fused_gelu.bytes / rows);
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_step_ops: error: {}\n", e.what());
    return 1;
  }
}
