// The fused bias and GELU on a GPU: a thread a (chunk of rows, column), walking its chunk's rows
// in order (a warp's threads read consecutive columns of a row together); in the backward it
// also sums its column's dz over the chunk, and then a thread a column adds the chunks in order.
// No atomics: every bit depends only on the inputs (bias_gelu_rows.h).
#include <cuda_runtime.h>

#include "trainer/model/bias_gelu_kernels.h"
#include "trainer/model/bias_gelu_rows.h"

namespace wit::model::gelu {
namespace {

constexpr int kColumnsPerBlock = 256;

template <class H>
__global__ void __launch_bounds__(kColumnsPerBlock)
    bias_gelu_forward_kernel(const H* h, const float* b, int64_t rows, int64_t C, H* y) {
  const int64_t j = int64_t(blockIdx.y) * kColumnsPerBlock + threadIdx.x;
  if (j < C) chunk_forward(h, b, rows, C, int64_t(blockIdx.x), j, y);
}

template <class H>
__global__ void __launch_bounds__(kColumnsPerBlock)
    bias_gelu_backward_kernel(const H* dy, const H* h, const float* b, int64_t rows, int64_t C,
                              H* dh, float* partials) {
  const int64_t j = int64_t(blockIdx.y) * kColumnsPerBlock + threadIdx.x;
  if (j < C) chunk_backward(dy, h, b, rows, C, int64_t(blockIdx.x), j, dh, partials);
}

__global__ void __launch_bounds__(kColumnsPerBlock)
    bias_gelu_bias_sum_kernel(const float* partials, int64_t n, int64_t C, float* db) {
  const int64_t j = int64_t(blockIdx.x) * kColumnsPerBlock + threadIdx.x;
  if (j < C) chunks_total(partials, n, C, j, db);
}

const char* launched() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

unsigned column_blocks(int64_t C) {
  return unsigned((C + kColumnsPerBlock - 1) / kColumnsPerBlock);
}

}  // namespace

const char* forward_cuda(const void* h, bool bf16, const float* b, int64_t rows, int64_t C, void* y,
                         void* stream) {
  if (rows == 0) return nullptr;
  const auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(unsigned(chunks(rows)), column_blocks(C));
  if (bf16)
    bias_gelu_forward_kernel<<<grid, kColumnsPerBlock, 0, s>>>(static_cast<const uint16_t*>(h), b,
                                                               rows, C, static_cast<uint16_t*>(y));
  else
    bias_gelu_forward_kernel<<<grid, kColumnsPerBlock, 0, s>>>(static_cast<const float*>(h), b,
                                                               rows, C, static_cast<float*>(y));
  return launched();
}

const char* backward_cuda(const void* dy, const void* h, bool bf16, const float* b, int64_t rows,
                          int64_t C, void* dh, float* partials, float* db, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const int64_t n = chunks(rows);
  if (rows > 0) {
    const dim3 grid(unsigned(n), column_blocks(C));
    if (bf16)
      bias_gelu_backward_kernel<<<grid, kColumnsPerBlock, 0, s>>>(
          static_cast<const uint16_t*>(dy), static_cast<const uint16_t*>(h), b, rows, C,
          static_cast<uint16_t*>(dh), partials);
    else
      bias_gelu_backward_kernel<<<grid, kColumnsPerBlock, 0, s>>>(
          static_cast<const float*>(dy), static_cast<const float*>(h), b, rows, C,
          static_cast<float*>(dh), partials);
    if (const char* e = launched()) return e;
  }
  bias_gelu_bias_sum_kernel<<<column_blocks(C), kColumnsPerBlock, 0, s>>>(partials, n, C, db);
  return launched();
}

}  // namespace wit::model::gelu
