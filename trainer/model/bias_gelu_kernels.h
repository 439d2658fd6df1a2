// The fused bias and GELU's CUDA kernels (bias_gelu.cu), on raw device pointers: no torch, so
// nvcc compiles them without torch's headers. Built only with the CUDA path
// (WIT_MODEL_CUDA_KERNELS); bias_gelu.cpp calls them for tensors on a GPU. Rows are row-major and
// contiguous, in fp32 or bf16 (`bf16`); work is queued on `stream` (a cudaStream_t). Each returns
// nullptr, or the CUDA runtime's message for a launch that failed.
#pragma once

#include <cstdint>

namespace wit::model::gelu {

// y = gelu(h + b) for `rows` rows of C values h, y in the rows' type.
const char* forward_cuda(const void* h, bool bf16, const float* b, int64_t rows, int64_t C, void* y,
                         void* stream);

// dh = dy * gelu'(h + b) in the rows' type, and the bias's gradient db (C, fp32) through
// `partials`, a scratch of chunks(rows) * C floats.
const char* backward_cuda(const void* dy, const void* h, bool bf16, const float* b, int64_t rows,
                          int64_t C, void* dh, float* partials, float* db, void* stream);

}  // namespace wit::model::gelu
