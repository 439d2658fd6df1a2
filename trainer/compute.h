// Where and how precisely a run computes: the device (train.device), the matmul precision
// (train.precision) and the attention kernel (model.attention), resolved once at start-up
// against this build of libtorch and this machine. A choice that cannot run here is an error
// that says why, never silently replaced by another.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/config.h"
#include "record/run_config.h"

namespace wit {

struct Compute {
  torch::Device device{torch::kCPU};
  bool bf16 = false;               // bf16 autocast for matmuls and attention
  std::string attention = "math";  // resolved: math or flash
  std::string cross_entropy = "ops";  // ops, or fused (CUDA only)
  std::string layer_norm = "ops";     // ops, or fused (CUDA only)
  std::string gelu = "ops";           // ops, or fused (CUDA only)
  std::string optim_kernels = "ops";  // ops, or fused (the CPU's own arithmetic on CUDA)
  // Under bf16: the matmuls' weights cast to bf16 once a step, not by autocast in every
  // micro-batch (trainer/step.cpp; the same bits). Not a choice: off only to compare.
  bool bf16_weights_once = true;
  bool is_cuda() const { return device.is_cuda(); }
  // Whether the norm and AdamW run as wit's fused kernels here (trainer/device_ops.h).
  bool fused_optimizer() const { return optim_kernels == "fused"; }
};

// Whether this libtorch was built with CUDA (the pinned PyTorch wheel's is; a CPU-only build of
// libtorch is not).
bool libtorch_has_cuda();

// Resolves `cfg`'s train.device, train.precision, model.attention, model.cross_entropy,
// model.layer_norm, model.gelu and optim.kernels for this process.
// model.attention = auto is written back into `cfg` as resolved (it is committed: the genesis
// must name the kernel the run used); train.device stays as given (not committed). A process of
// a job of `world_size` uses GPU (local rank mod visible GPUs), as the NCCL backend does. On CUDA
// it pins the numerics first (trainer/dist/gpu_determinism.h, deterministic algorithms, no TF32); a
// nondeterministic kernel is then an error, not a warning.
Compute resolve_compute(config::Config& cfg, int world_size, bool quiet);

// The compute a verifier replays a run on, from the run's committed config and the device facts
// its sessions recorded (sessions_json, unsigned: a false claim can only make a verifier refuse
// or replay within a tolerance, never certify). A run that trained on a GPU replays exactly only
// on the same GPU model with the same CUDA, cuBLAS, cuDNN and libtorch: there it gets that GPU
// with the run's precision; elsewhere, with a tolerance, the CPU in fp32 with the math attention
// (`note` says so); without one, an error that names both machines and points to --tolerance.
Compute replay_compute(const std::string& sessions_json, const RunConfig& rc, bool tolerance,
                       int world_size, std::string* note);

// On --resume: the last session's device facts (sessions_json) must be this process's, since
// train.device is not committed but the arithmetic is part of the trajectory. Throws naming
// both (`origin` names the log).
void check_resume_compute(const std::string& sessions_json, const Compute& compute,
                          const std::string& origin);

// The device facts a session records: for CUDA the GPU model, SM count, driver, CUDA, cuBLAS,
// cuDNN and NCCL versions; {"device": "cpu"} otherwise.
nlohmann::json device_facts(const Compute& compute);

// Waits for the device's queued work (nothing on the CPU): for timing a step.
void synchronize(const Compute& compute);

// The most device memory the process has had allocated so far (0 on the CPU).
int64_t peak_device_bytes(const Compute& compute);

// Scoped bf16 autocast on the compute's device (nothing when the compute is fp32).
class AutocastScope {
 public:
  explicit AutocastScope(const Compute& compute);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_;
};

}  // namespace wit
