#include "trainer/compute.h"

#include <fmt/format.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/json.h"
#include "trainer/cpu_numerics.h"
#include "trainer/device_ops.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/gpu_determinism.h"
#include "trainer/model/bias_gelu.h"
#include "trainer/model/cross_entropy.h"
#include "trainer/model/kernels.h"
#include "trainer/model/layer_norm.h"
#include "trainer/optim/adamw.h"

#ifdef WIT_TORCH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

namespace wit {

bool libtorch_has_cuda() {
#ifdef WIT_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

namespace {

// wit's fused kernels that a compute uses: each one's committed key, its name among the device
// facts, the version of its arithmetic, whether the CPU computes that arithmetic too (the
// optimizer's: its kernels run the CPU's loops' arithmetic; the others' CPU forms are for tests),
// and whether this build has its CUDA kernels.
struct FusedKernel {
  const char* key;
  const char* fact;
  const char* arithmetic;
  bool on_cpu;
  bool built;
};
std::vector<FusedKernel> fused_kernels(const Compute& c) {
  std::vector<FusedKernel> out;
  if (c.cross_entropy == "fused")
    out.push_back({"model.cross_entropy", "cross_entropy", model::kFusedCrossEntropyArithmetic,
                   false, model::kernels_built()});
  if (c.layer_norm == "fused")
    out.push_back({"model.layer_norm", "layer_norm", model::kFusedLayerNormArithmetic, false,
                   model::kernels_built()});
  if (c.gelu == "fused")
    out.push_back(
        {"model.gelu", "gelu", model::kFusedGeluArithmetic, false, model::kernels_built()});
  if (c.fused_optimizer())
    out.push_back({"optim.kernels", "optim_kernels", optim::kFusedOptimizerArithmetic, true,
                   fused_optimizer_built()});
  return out;
}
bool all_built(const std::vector<FusedKernel>& fused) {
  return std::all_of(fused.begin(), fused.end(), [](const FusedKernel& k) { return k.built; });
}
// Those that the CPU does not compute.
std::vector<FusedKernel> cuda_only(std::vector<FusedKernel> fused) {
  fused.erase(
      std::remove_if(fused.begin(), fused.end(), [](const FusedKernel& k) { return k.on_cpu; }),
      fused.end());
  return fused;
}
// The kernels a run's committed config names.
Compute committed_kernels(const RunConfig& rc) {
  Compute c;
  c.cross_entropy = rc.model.cross_entropy;
  c.layer_norm = rc.model.layer_norm;
  c.gelu = rc.model.gelu;
  c.optim_kernels = rc.optim.kernels;
  return c;
}
// "wit-cross-entropy-v1 wit-layer-norm-v1": a cross-entropy-only run's is its one version.
std::string arithmetic_of(const std::vector<FusedKernel>& fused) {
  std::string out;
  for (const auto& k : fused) out += (out.empty() ? "" : " ") + std::string(k.arithmetic);
  return out;
}
std::string keys_of(const std::vector<FusedKernel>& fused) {
  std::string out;
  for (const auto& k : fused) out += (out.empty() ? "" : " and ") + std::string(k.key);
  return out;
}

// GPU numerics pinned before any CUDA work: library settings, then torch's own switches.
void pin_gpu_numerics(bool quiet) {
  for (auto& [k, v] : dist::apply_gpu_determinism())
    if (!quiet) fmt::print("determinism: {}={}\n", k, v);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
}

}  // namespace

Compute resolve_compute(config::Config& cfg, int world_size, bool quiet) {
  Compute c;
  const std::string device = cfg.get_string("train.device");
  const std::string precision = cfg.get_string("train.precision");
  const std::string attention = cfg.get_string("model.attention");
  const bool has_gpu = libtorch_has_cuda() && torch::cuda::is_available();
  if (device == "cuda" && !libtorch_has_cuda())
    fail(
        "train.device = cuda: this libtorch was built without CUDA (libtorch {}); build wit "
        "against a CUDA libtorch (docs/gpu.md) or set train.device=cpu",
        TORCH_VERSION);
  if (device == "cuda" && !has_gpu)
    fail("train.device = cuda: no GPU is visible to this process (CUDA_VISIBLE_DEVICES={})",
         std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset");
  if (device == "cuda" || (device == "auto" && has_gpu)) {
    pin_gpu_numerics(quiet);
    const int visible = int(torch::cuda::device_count());
    const int local = dist::local_rank(world_size);
    c.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local % visible));
  }

  if (precision == "bf16") {
    if (!c.is_cuda())
      fail(
          "train.precision = bf16 runs on CUDA only; this run computes on the CPU, where wit "
          "trains in fp32 (set train.precision=fp32, or train.device=cuda on a GPU machine)");
    c.bf16 = true;
  }

  // Flash attention: scaled-dot-product attention's flash kernel, on CUDA for bf16 inputs; its
  // dropout would draw from the global generator, so none.
  std::string why_not;
  if (!c.is_cuda())
    why_not = "its flash kernel runs on CUDA only, and this run computes on the CPU";
  else if (!c.bf16)
    why_not = "its flash kernel takes bf16 inputs: set train.precision=bf16";
  else if (cfg.get_float("model.dropout") > 0)
    why_not =
        "its kernel would draw the attention dropout mask from the global generator, not the "
        "micro-batch's: set model.dropout=0";
  if (attention == "flash" && !why_not.empty()) fail("model.attention = flash: {}", why_not);
  c.attention = attention == "auto" ? (why_not.empty() ? "flash" : "math") : attention;
  cfg.set("model.attention", c.attention, "model.attention = auto, resolved");

  // wit's fused kernels: CUDA (the model's CPU forms exist for tests, not for training).
  c.cross_entropy = cfg.get_string("model.cross_entropy");
  c.layer_norm = cfg.get_string("model.layer_norm");
  c.gelu = cfg.get_string("model.gelu");
  c.optim_kernels = cfg.get_string("optim.kernels");
  for (const auto& k : fused_kernels(c)) {
    if (!c.is_cuda() && k.on_cpu) continue;  // the CPU's loops are that arithmetic
    if (!c.is_cuda())
      fail(
          "{} = fused: its kernels run on CUDA only, and this run computes on the CPU (set {}=ops)",
          k.key, k.key);
    if (!k.built)
      fail(
          "{} = fused: this wit was built without its CUDA kernels (the CUDA path needs nvcc and "
          "NCCL at configure time; docs/gpu.md)",
          k.key);
  }
#ifdef WIT_TORCH_CUDA
  if (c.attention == "flash") {
    // The flash backend alone: another backend's kernel would be another trajectory.
    at::globalContext().setSDPUseFlash(true);
    at::globalContext().setSDPUseMemEfficient(false);
    at::globalContext().setSDPUseMath(false);
  }
#endif
  return c;
}

nlohmann::json device_facts(const Compute& c) {
  if (!c.is_cuda()) {
    nlohmann::json f = {{"device", "cpu"}};
    f.update(cpu_numerics_facts());
    return f;
  }
#ifdef WIT_TORCH_CUDA
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(c.device.index());
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  auto v = [](int x) { return fmt::format("{}.{}", x / 1000, (x % 1000) / 10); };
  nlohmann::json f = {{"device", "cuda"},
                      {"gpu", p->name},
                      {"sm_count", p->multiProcessorCount},
                      {"compute_capability", fmt::format("{}.{}", p->major, p->minor)},
                      {"driver", v(driver)},
                      {"cuda", v(runtime)},
                      {"cublas", fmt::format("{}.{}.{}", cublas_major, cublas_minor, cublas_patch)},
                      {"cudnn", at::detail::getCUDAHooks().versionCuDNN()},
                      {"precision", c.bf16 ? "bf16" : "fp32"},
                      {"attention", c.attention}};
  // wit's own kernels are compiled with wit: their compiler is a fact of the bits (only where a
  // run uses them, so the facts of every other run stay as they were).
  if (const auto fused = fused_kernels(c); !fused.empty()) {
    for (const auto& k : fused) f[k.fact] = "fused";
    f["kernels_compiler"] = model::kernels_compiler();
    f["kernels"] = arithmetic_of(fused);
  }
  return f;
#else
  return {{"device", "cuda"}};
#endif
}

namespace {

// The facts that decide a GPU's bits: the model and every library on the path.
nlohmann::json numerics_facts(nlohmann::json facts) {
  nlohmann::json out;
  for (const char* k :
       {"gpu", "sm_count", "cuda", "cublas", "cudnn", "libtorch", "kernels", "kernels_compiler"})
    if (facts.contains(k)) out[k] = facts[k];
  return out;
}

std::string describe(const nlohmann::json& f) {
  if (!f.contains("gpu") || !f["gpu"].is_string()) return "the CPU (no GPU)";
  // Unsigned facts: printed as JSON values, whatever their types.
  auto v = [&](const char* k) {
    if (!f.contains(k)) return std::string("?");
    return f[k].is_string() ? f[k].get<std::string>() : f[k].dump();
  };
  std::string kernels;  // wit's own, where the run used them
  if (f.contains("kernels_compiler"))
    kernels = ", wit's kernels " + v("kernels") + " built by " + v("kernels_compiler");
  return fmt::format("{} ({} SMs), CUDA {}, cuBLAS {}, cuDNN {}, libtorch {}{}", v("gpu"),
                     v("sm_count"), v("cuda"), v("cublas"), v("cudnn"), v("libtorch"), kernels);
}

// The numerics facts of a session's compute (the empty object for the CPU).
nlohmann::json session_facts(const nlohmann::json& s) {
  // Unsigned text the trainer wrote: a field of another type is taken as absent, never thrown.
  if (!s.is_object() || !s.contains("compute") || !s["compute"].is_object() ||
      s["compute"].value("device", nlohmann::json()) != "cuda")
    return nlohmann::json::object();
  auto f = s["compute"];
  if (s.contains("versions") && s["versions"].is_object()) {
    const auto v = s["versions"].value("libtorch", nlohmann::json());
    f["libtorch"] = v.is_string() ? v.get<std::string>() : std::string("?");
  }
  return numerics_facts(f);
}

// The same for this process.
nlohmann::json facts_here(const Compute& c) {
  if (!c.is_cuda()) return nlohmann::json::object();
  auto f = device_facts(c);
  f["libtorch"] = TORCH_VERSION;
  return numerics_facts(f);
}

// The CPU numerics key of a session that computed on the CPU (cpu_numerics.h).
nlohmann::json session_cpu_key(const nlohmann::json& s) {
  const nlohmann::json compute =
      s.is_object() && s.contains("compute") ? s["compute"] : nlohmann::json::object();
  std::string libtorch = "?";
  if (s.is_object() && s.contains("versions") && s["versions"].is_object() &&
      s["versions"].contains("libtorch") && s["versions"]["libtorch"].is_string())
    libtorch = s["versions"]["libtorch"].get<std::string>();
  return cpu_numerics_key(compute, libtorch);
}

nlohmann::json cpu_key_here() { return cpu_numerics_key(cpu_numerics_facts(), TORCH_VERSION); }

}  // namespace

void check_resume_compute(const std::string& sessions_json, const Compute& compute,
                          const std::string& origin) {
  const auto sessions = parse_untrusted_json(sessions_json);
  if (!sessions.is_array() || sessions.empty()) return;
  const auto ran = session_facts(sessions.back()), here = facts_here(compute);
  // On the CPU the numerics are the pinned code paths (cpu_numerics.h); on a GPU its facts.
  const bool cpu = ran.empty() && here.empty();
  const auto ran_cpu = session_cpu_key(sessions.back()), here_cpu = cpu_key_here();
  if (cpu ? ran_cpu == here_cpu : ran == here) return;
  fail(
      "{}: the run trained on {} and this process computes on {}: a resume must continue the "
      "trajectory with the same arithmetic. Resume {}, or start a new run",
      origin, cpu ? describe_cpu_numerics(ran_cpu) : describe(ran),
      cpu ? describe_cpu_numerics(here_cpu) : describe(here),
      cpu ? "with the same CPU numerics (pinned by default; WIT_CPU_NUMERICS) and libtorch"
          : "on the same GPU model and libraries (train.device selects it)");
}

Compute replay_compute(const std::string& sessions_json, const RunConfig& rc, bool tolerance,
                       int world_size, std::string* note) {
  Compute cpu;
  cpu.attention = rc.model.attention;
  // The fused kernels' CPU forms are for tests: a CPU replay computes with libtorch's operations.
  cpu.cross_entropy = "ops";
  cpu.layer_norm = "ops";
  cpu.gelu = "ops";
  cpu.optim_kernels = rc.optim.kernels;  // the CPU computes the optimizer's definition either way
  // The sessions that trained on a GPU, and what decided their numerics.
  nlohmann::json ran_on = nlohmann::json::object();
  const auto sessions = parse_untrusted_json(sessions_json);
  if (sessions.is_array())
    for (const auto& s : sessions)
      if (!session_facts(s).empty()) ran_on = session_facts(s);
  if (ran_on.empty()) {
    // wit trains with its fused kernels on CUDA only: a CPU run that commits them is not one
    // wit trained, and no exact replay of it is defined.
    if (const auto fused = cuda_only(fused_kernels(committed_kernels(rc))); !fused.empty()) {
      const std::string why = fmt::format(
          "the run commits {} = fused, whose kernels run on CUDA only, but no session of it "
          "trained on a GPU",
          keys_of(fused));
      if (!tolerance) fail("{}: no exact replay is defined. Verify with --tolerance", why);
      if (note) *note = why + "; replaying with libtorch's operations, within the tolerance";
    }
    // A CPU run: every session's numerics must be this verifier's (pinned, the same libtorch;
    // or native on the same CPU model), else the replay could differ without anyone lying.
    const auto here = cpu_key_here();
    if (sessions.is_array())
      for (const auto& s : sessions) {
        const auto ran = session_cpu_key(s);
        if (ran == here) continue;
        const std::string why =
            fmt::format("the run trained on {}, and this verifier has {}",
                        describe_cpu_numerics(ran), describe_cpu_numerics(here));
        if (!tolerance)
          fail(
              "{}: an exact replay needs the same CPU numerics and libtorch. Verify with the "
              "numerics the run used (WIT_CPU_NUMERICS; docs/verify.md), or with --tolerance "
              "for a replay within stated distances",
              why);
        if (note)
          *note = (note->empty() ? "" : *note + "; ") + why + ": replaying within the tolerance";
        break;
      }
    return cpu;
  }

  nlohmann::json here = nlohmann::json::object();  // no GPU
  Compute gpu;
  // A run that used wit's fused kernels replays exactly only with them.
  const bool kernels = all_built(fused_kernels(committed_kernels(rc)));
  if (kernels && libtorch_has_cuda() && torch::cuda::is_available()) {
    config::Config c = config::Config::parse(
        "{}", "replay", run_schema(),
        {"train.device=cuda", "train.precision=" + rc.train.precision,
         "model.attention=" + rc.model.attention, "model.cross_entropy=" + rc.model.cross_entropy,
         "model.layer_norm=" + rc.model.layer_norm, "model.gelu=" + rc.model.gelu,
         "optim.kernels=" + rc.optim.kernels,
         fmt::format("model.dropout={}", rc.model.dropout)});
    gpu = resolve_compute(c, world_size, /*quiet=*/true);
    here = facts_here(gpu);
  }
  if (here == ran_on) return gpu;
  const std::string why = fmt::format(
      "the run trained on {}, and this verifier has {}{}", describe(ran_on), describe(here),
      kernels ? "" : " (this wit was built without its fused kernels for CUDA)");
  if (!tolerance)
    fail(
        "{}: an exact replay needs the same GPU model and library versions. Verify on such a "
        "machine, or with --tolerance for a replay within stated distances (docs/verify.md)",
        why);
  if (note)
    *note = fmt::format(
        "{}: replaying on the CPU in fp32 with the math attention and libtorch's "
        "cross-entropy, layer norm and GELU, within the tolerance",
        why);
  cpu.attention = "math";
  return cpu;
}

void synchronize(const Compute& c) {
#ifdef WIT_TORCH_CUDA
  if (c.is_cuda()) torch::cuda::synchronize(c.device.index());
#else
  (void)c;
#endif
}

int64_t peak_device_bytes(const Compute& c) {
#ifdef WIT_TORCH_CUDA
  if (c.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c.device.index());
    return stats.allocated_bytes[0].peak;  // [0]: the aggregate over both pools
  }
#else
  (void)c;
#endif
  return 0;
}

// On the compute's device: CUDA for a run (resolve_compute allows bf16 nowhere else); the CPU's
// autocast for tests and benchmarks that write a GPU step's casts out on the CPU.
AutocastScope::AutocastScope(const Compute& c) : active_(c.bf16), device_(c.device.type()) {
  if (!active_) return;
#ifndef WIT_TORCH_CUDA
  if (device_ == at::kCUDA) fail("bf16 autocast needs a CUDA libtorch");
#endif
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, at::kBFloat16);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::set_autocast_enabled(device_, false);
  at::autocast::clear_cache();
}

}  // namespace wit
