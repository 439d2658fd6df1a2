// The optimizer on a GPU in two kernels, each element's and each chunk's arithmetic the CPU's
// (adamw_element.h): no atomics and no reordering, so the bits are the CPU loops' own.
#include <cuda_runtime.h>

#include "trainer/optim/adamw_kernels.h"

namespace wit::optim::cuda {
namespace {

constexpr int kThreads = 256, kWarp = 32, kWarpsPerBlock = kThreads / kWarp, kTile = 256;

// A chunk's sum is a chain of dependent additions in the CPU's order, whatever the kernel does.
// One warp a chunk, a tile of kTile elements at a time: its lanes read the tile (coalesced
// reads, all in flight together) and stage their squares (exact in double) in shared memory,
// then one lane adds them in element order. So the chain is the CPU's, and a chain's additions
// are all that waits; the chunks' warps run side by side.
__global__ void __launch_bounds__(kThreads)
    norm_partials_kernel(const float* g, int64_t n, int64_t chunk, int64_t chunks,
                         double* partials) {
  __shared__ double staged[kWarpsPerBlock][kTile];
  const int warp = int(threadIdx.x / kWarp), lane = int(threadIdx.x % kWarp);
  const int64_t c = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
  if (c >= chunks) return;  // the whole warp (c is the warp's); only warps synchronise
  const int64_t b = c * chunk, e = b + chunk < n ? b + chunk : n;
  double* squares = staged[warp];
  double s = 0.0;
  for (int64_t t = b; t < e; t += kTile) {
#pragma unroll
    for (int u = 0; u < kTile / kWarp; ++u) {
      const int64_t i = t + u * kWarp + lane;
      if (i < e) squares[u * kWarp + lane] = square(g[i]);
    }
    __syncwarp();
    if (lane == 0) {
      const int m = e - t < kTile ? int(e - t) : kTile;
      for (int j = 0; j < m; ++j) s += squares[j];
    }
    __syncwarp();  // the tile is summed before the next overwrites it
  }
  if (lane == 0) partials[c] = s;
}

__global__ void __launch_bounds__(kThreads)
    adamw_kernel(float* p, const float* g, float* m, float* v, const bool* decay, int64_t n,
                 AdamWScalars k) {
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    float pi = p[i], mi = m[i], vi = v[i];
    adamw_element(pi, g[i], mi, vi, decay[i] ? k.decay : 1.0f, k);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
  }
}

const char* launched() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

// At most 65,536 blocks (16.7M elements a turn, far more threads than a GPU holds at once),
// then grid-stride: a 124M model's update already takes several turns, and so does the test's
// largest case.
constexpr int64_t kMaxBlocks = int64_t(1) << 16;
unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < kMaxBlocks ? b : kMaxBlocks);
}

}  // namespace

const char* grad_norm_partials(const float* g, int64_t n, int64_t chunk, double* partials,
                               void* stream) {
  if (n <= 0) return nullptr;
  const int64_t chunks = (n + chunk - 1) / chunk;
  norm_partials_kernel<<<unsigned((chunks + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(g, n, chunk, chunks, partials);
  return launched();
}

const char* adamw_update(float* p, const float* g, float* m, float* v, const bool* decay, int64_t n,
                         AdamWScalars k, void* stream) {
  if (n <= 0) return nullptr;
  adamw_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, g, m, v, decay,
                                                                                  n, k);
  return launched();
}

}  // namespace wit::optim::cuda
