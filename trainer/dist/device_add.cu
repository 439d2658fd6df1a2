// a[i] = a[i] + b[i] on the device (see device_add.h). Kept free of the project's host headers:
// nvcc compiles only this.
#include <algorithm>

#include "trainer/dist/device_add.h"

namespace wit::dist {

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU; the grid-stride loop covers the rest. Which thread adds
// which element does not change the result: every element is one independent addition.
constexpr int64_t kMaxBlocks = 4096;

__global__ void add_kernel(float* __restrict__ a, const float* __restrict__ b, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    a[i] = a[i] + b[i];
}

}  // namespace

cudaError_t device_add(float* a, const float* b, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int64_t blocks = std::min(kMaxBlocks, (n + kThreads - 1) / kThreads);
  add_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(a, b, n);
  return cudaGetLastError();
}

}  // namespace wit::dist
