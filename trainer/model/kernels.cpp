#include "trainer/model/kernels.h"

#include "core/error.h"

#ifdef WIT_MODEL_CUDA_KERNELS
#include <ATen/cuda/EmptyTensor.h>
#endif

namespace wit::model {

#ifdef WIT_MODEL_CUDA_KERNELS
namespace kernel {
const char* compiler_version();  // kernels.cu
}
#endif

bool kernels_built() {
#ifdef WIT_MODEL_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

std::string kernels_compiler() {
#ifdef WIT_MODEL_CUDA_KERNELS
  return kernel::compiler_version();
#else
  return "";
#endif
}

void require_kernels(const torch::Tensor& t, const char* what) {
  if (t.is_cuda() && !kernels_built())
    fail("{}: this wit was built without its CUDA kernels (docs/gpu.md)", what);
  WIT_CHECK(t.is_cuda() || t.is_cpu(), "{}: tensors on {}", what, t.device().str());
}

torch::Tensor kernel_output(at::IntArrayRef sizes, const torch::TensorOptions& options) {
#ifdef WIT_MODEL_CUDA_KERNELS
  // at::detail's allocation is the caching allocator's alone; at::empty adds the fill.
  if (options.device().is_cuda()) return at::Tensor(at::detail::empty_cuda(sizes, options));
#endif
  return torch::empty(sizes, options);
}

KernelScope::KernelScope(const char* name, std::vector<c10::IValue> in,
                         std::vector<c10::IValue> out)
    : in_(std::move(in)), guard_(at::RecordScope::FUNCTION) {
  if (!guard_.isActive()) return;
  if (guard_.needsInputs())
    guard_.before(name, c10::ArrayRef<const c10::IValue>(in_.data(), in_.size()));
  else
    guard_.before(name);
  if (guard_.needsOutputs()) guard_.setOutputs(std::move(out));
}

}  // namespace wit::model
