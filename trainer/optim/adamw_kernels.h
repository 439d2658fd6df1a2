// The optimizer's fused CUDA kernels (adamw.cu, optim.kernels = fused), on raw device pointers:
// no torch, so nvcc compiles them without torch's headers. Built only with the CUDA path
// (WIT_OPTIM_CUDA_KERNELS); trainer/device_ops.cpp calls them for tensors on a GPU. Each queues
// its work on `stream` (a cudaStream_t) and returns nullptr, or the CUDA runtime's message for a
// launch that failed.
#pragma once

#include <cstdint>

#include "trainer/optim/adamw_element.h"

namespace wit::optim::cuda {

// partials[c] = sum_of_squares(g, c·chunk, min(n, (c+1)·chunk)) for every chunk c of g[0, n):
// each partial the CPU's left-to-right sum (one warp a chunk).
const char* grad_norm_partials(const float* g, int64_t n, int64_t chunk, double* partials,
                               void* stream);

// adamw_element on each of the n elements, with d = k.decay where decay[i], else 1.
const char* adamw_update(float* p, const float* g, float* m, float* v, const bool* decay, int64_t n,
                         AdamWScalars k, void* stream);

}  // namespace wit::optim::cuda
