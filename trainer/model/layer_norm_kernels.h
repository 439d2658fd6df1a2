// The fused layer norm's CUDA kernels (layer_norm.cu), on raw device pointers: no torch, so nvcc
// compiles them without torch's headers. Built only with the CUDA path (WIT_MODEL_CUDA_KERNELS);
// layer_norm.cpp calls them for tensors on a GPU. Rows are row-major and contiguous; work is
// queued on `stream` (a cudaStream_t). Each returns nullptr, or the CUDA runtime's message for a
// launch that failed.
#pragma once

#include <cstdint>

namespace wit::model::ln {

enum class Type { f32, bf16 };

// The residual add fused in front of the layer norm (null pointers: none). Forward: the rows
// normalised are residual + branch, written to `sum`. Backward: `upstream` (the gradient reaching
// the sum from after the block) is added to dx, and the total is also written to `branch_grad`
// in `branch_type` where wanted.
struct ResidualAdd {
  const float* residual = nullptr;
  const void* branch = nullptr;
  float* sum = nullptr;
  const float* upstream = nullptr;
  void* branch_grad = nullptr;
  Type branch_type = Type::f32;
};

// y (in y_type), mean and rstd of `rows` rows of C fp32 values x (or add->sum, which it writes),
// with weight w and bias b (C).
const char* forward_cuda(const float* x, const float* w, const float* b, int64_t rows, int64_t C,
                         void* y, Type y_type, float* mean, float* rstd, const ResidualAdd& add,
                         void* stream);

// dx (fp32) for the rows' upstream gradients dy (in dy_type), and the weight's and bias's
// gradients dw, db (C, fp32) through `partials`, a scratch of 2 * chunks(rows) * C floats.
const char* backward_cuda(const void* dy, Type dy_type, const float* x, const float* w,
                          const float* mean, const float* rstd, int64_t rows, int64_t C, float* dx,
                          float* partials, float* dw, float* db, const ResidualAdd& add,
                          void* stream);

}  // namespace wit::model::ln
