// The weight sketch in one pass over the parameters: one read of each, no temporaries.
// Integer arithmetic mod 2^32 is associative and commutative, so any order of the products'
// sums (the warps', the blocks', and the atomic adds into the four lanes) gives the definition's
// bits exactly: this kernel has no order to keep, unlike the floating-point ones.
#include <cuda_runtime.h>

#include "trainer/sketch_kernel.h"

namespace wit::cuda {
namespace {

using witness::kSketchBlock;
using witness::kSketchLanes;
constexpr int kThreads = 256, kWarp = 32, kWarpsPerBlock = kThreads / kWarp;
constexpr unsigned kFull = 0xffffffffu;

// One warp per sketch block (1024 parameters) at a time: its lanes read 32 consecutive
// parameters per turn (coalesced) and multiply each by T_l of its place in the block, from the
// table staged in shared memory (consecutive words: no bank conflicts). Lanes 0-3 compute the
// block's S_l and pass them round, so each lane folds its block sums in with one multiply.
__global__ void __launch_bounds__(kThreads)
    sketch_kernel(const float* __restrict__ values, int64_t first, int64_t n,
                  const uint32_t* __restrict__ table, SketchKeys keys, uint32_t* lanes) {
  __shared__ uint32_t t[kSketchLanes][kSketchBlock];
  __shared__ uint32_t warp_sums[kWarpsPerBlock][kSketchLanes];
  for (int k = threadIdx.x; k < kSketchLanes * kSketchBlock; k += kThreads)
    t[k / kSketchBlock][k % kSketchBlock] = table[k];
  __syncthreads();

  const int warp = int(threadIdx.x / kWarp), lane = int(threadIdx.x % kWarp);
  const int64_t end = first + n;
  const int64_t b_first = first / kSketchBlock, b_end = (end + kSketchBlock - 1) / kSketchBlock;
  uint64_t my_key = 0;  // lane l < kSketchLanes computes S_l
#pragma unroll
  for (int l = 0; l < kSketchLanes; ++l)
    if (lane == l) my_key = keys.key[l];
  uint32_t acc[kSketchLanes] = {};
  for (int64_t b = b_first + int64_t(blockIdx.x) * kWarpsPerBlock + warp; b < b_end;
       b += int64_t(gridDim.x) * kWarpsPerBlock) {
    uint32_t dot[kSketchLanes] = {};
    const int64_t base = b * kSketchBlock;
#pragma unroll 8
    for (int r = 0; r < kSketchBlock / kWarp; ++r) {
      const int j = r * kWarp + lane;
      const int64_t i = base + j;
      if (i >= first && i < end) {
        const uint32_t u = __float_as_uint(values[i - first]);
#pragma unroll
        for (int l = 0; l < kSketchLanes; ++l) dot[l] += t[l][j] * u;
      }
    }
    const uint32_t s_mine =
        lane < kSketchLanes ? witness::sketch_coefficient(my_key, uint64_t(b)) : 0;
#pragma unroll
    for (int l = 0; l < kSketchLanes; ++l) acc[l] += dot[l] * __shfl_sync(kFull, s_mine, l);
  }
#pragma unroll
  for (int l = 0; l < kSketchLanes; ++l)
    for (int d = kWarp / 2; d > 0; d /= 2) acc[l] += __shfl_xor_sync(kFull, acc[l], d);
  if (lane == 0)
    for (int l = 0; l < kSketchLanes; ++l) warp_sums[warp][l] = acc[l];
  __syncthreads();
  if (threadIdx.x < kSketchLanes) {
    uint32_t s = 0;
    for (int w = 0; w < kWarpsPerBlock; ++w) s += warp_sums[w][threadIdx.x];
    atomicAdd(lanes + threadIdx.x, s);  // wraps mod 2^32, as the definition's sum does
  }
}

}  // namespace

const char* weight_sketch(const float* values, int64_t first, int64_t n, const uint32_t* table,
                          SketchKeys keys, uint32_t* lanes, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaMemsetAsync(lanes, 0, kSketchLanes * sizeof(uint32_t), s);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  if (n <= 0) return nullptr;
  const int64_t blocks =
      (first + n + kSketchBlock - 1) / kSketchBlock - first / kSketchBlock;  // sketch blocks
  const int64_t grid = (blocks + kWarpsPerBlock - 1) / kWarpsPerBlock;
  // Enough blocks to fill any GPU; beyond that each warp takes more sketch blocks in turn.
  sketch_kernel<<<unsigned(grid < 2048 ? grid : 2048), kThreads, 0, s>>>(values, first, n, table,
                                                                         keys, lanes);
  e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

}  // namespace wit::cuda
