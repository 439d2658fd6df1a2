// What wit's own CUDA kernels (model.cross_entropy, model.layer_norm, model.gelu = fused) share:
// whether this build has them, the compiler that built them, and a profiler scope for a launch.
#pragma once

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace wit::model {

// Whether this build has wit's CUDA kernels (the CUDA path: nvcc and NCCL at configure time).
bool kernels_built();
// The compiler that built them ("nvcc 13.0.88"; empty without them): a GPU run that uses them
// records it among the facts its bits depend on (the cross-entropy's expf and logf are its).
std::string kernels_compiler();

// Fails, naming `what`, unless `t` is on the CPU (the kernels' CPU form) or on a GPU with this
// build's kernels.
void require_kernels(const torch::Tensor& t, const char* what);

// A tensor that one of wit's kernels writes in full before anything reads it. On a GPU it is
// allocated without the fill that deterministic mode gives every new tensor there (NaN over its
// whole size: a second write of every output), on the CPU with torch::empty.
torch::Tensor kernel_output(at::IntArrayRef sizes, const torch::TensorOptions& options);

// f(t's data in the kernels' arithmetic's terms): bf16 as its bit pattern (uint16_t*), else
// float*.
template <class F>
void with_kernel_data(const torch::Tensor& t, F&& f) {
  if (t.scalar_type() == torch::kBFloat16)
    f(reinterpret_cast<uint16_t*>(t.data_ptr<at::BFloat16>()));
  else
    f(t.data_ptr<float>());
}

// One kernel on a GPU: a profiler scope named for it, with its operands (profiles and
// wit_bench_step_ops see it as one launch). Costs a flag check when nothing is recording.
class KernelScope {
 public:
  KernelScope(const char* name, std::vector<c10::IValue> in, std::vector<c10::IValue> out);

 private:
  std::vector<c10::IValue> in_;  // the guard refers to them without owning them
  at::RecordFunction guard_;
};

}  // namespace wit::model
