// The fused cross-entropy's CUDA kernels (cross_entropy.cu), on raw device pointers: no torch, so
// nvcc compiles them without torch's headers. Built only with the CUDA path
// (WIT_MODEL_CUDA_KERNELS); cross_entropy.cpp calls them for tensors on a GPU.
// Each returns nullptr, or the CUDA runtime's message for a launch that failed.
#pragma once

#include <cstdint>

namespace wit::model::ce {

enum class LogitType { f32, bf16 };

// loss[r] and lse[r] for each of `rows` rows of V logits (row-major, contiguous), with targets[r]
// in [0, V). Work is queued on `stream` (a cudaStream_t).
const char* forward_cuda(const void* logits, LogitType type, const int64_t* targets, int64_t rows,
                         int64_t V, float* loss, float* lse, void* stream);

// grad_logits[r, j] = (exp(logits[r, j] - lse[r]) - [j = targets[r]]) * grad[r], in the logits'
// type.
const char* backward_cuda(const void* logits, LogitType type, const int64_t* targets,
                          const float* lse, const float* grad, int64_t rows, int64_t V,
                          void* grad_logits, void* stream);

}  // namespace wit::model::ce
