// The fused layer norm on a GPU: a warp a row, its threads the lanes of layer_norm_rows.h, the
// lanes' sums combined by shuffles in that header's tree (lane t adds lane t + s's value for
// s = 16, ..., 1; lane 0 ends with the tree's sum). The weight's and bias's gradients: a thread a
// column sums a chunk of rows in row order, then a thread a column adds the chunks in order.
// No atomics: every bit depends only on the inputs.
#include <cuda_runtime.h>

#include <type_traits>

#include "trainer/model/layer_norm_kernels.h"
#include "trainer/model/layer_norm_rows.h"

namespace wit::model::ln {
namespace {

constexpr int kRowsPerBlock = 8;  // warps a block
constexpr int kColumnsPerBlock = 256;

// The lanes' tree; every lane gets lane 0's result.
__device__ __forceinline__ float warp_tree(float v) {
  for (int s = kLanes / 2; s > 0; s /= 2) v = v + __shfl_down_sync(0xffffffffu, v, s);
  return __shfl_sync(0xffffffffu, v, 0);
}

// With a residual add, lane t first writes sum = residual + branch at its own columns and then
// reads only those back: a thread's own writes, so no synchronisation is needed.
template <class Y, class Br>
__global__ void __launch_bounds__(kLanes* kRowsPerBlock)
    layer_norm_forward_kernel(const float* x, const float* w, const float* b, int64_t rows,
                              int64_t C, Y* y, float* mean, float* rstd, const float* residual,
                              const Br* branch, float* sum) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;  // a whole warp: the shuffles' lanes are all present or all absent
  const int t = int(threadIdx.x);
  const float* xr = x + row * C;
  if (sum) {
    for (int64_t j = t; j < C; j += kLanes)
      sum[row * C + j] = sum_at(residual[row * C + j], load(branch + row * C, j));
    xr = sum + row * C;
  }
  const float m = mean_of(warp_tree(lane_sum_x(xr, C, t)), C);
  const float r = rstd_of(warp_tree(lane_sum_sq(xr, C, t, m)), C);
  for (int64_t j = t; j < C; j += kLanes) store(y + row * C, j, y_at(xr[j], m, r, w[j], b[j]));
  if (t == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

template <class D, class Br>
__global__ void __launch_bounds__(kLanes* kRowsPerBlock)
    layer_norm_backward_kernel(const D* dy, const float* x, const float* w, const float* mean,
                               const float* rstd, int64_t rows, int64_t C, float* dx,
                               const float* upstream, Br* branch_grad) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;
  const float* xr = x + row * C;
  const D* dr = dy + row * C;
  const float m = mean[row], r = rstd[row];
  const int t = int(threadIdx.x);
  const float sg = warp_tree(lane_sum_g(dr, w, C, t));
  const float sgx = warp_tree(lane_sum_gx(dr, w, xr, m, r, C, t));
  for (int64_t j = t; j < C; j += kLanes) {
    float v = dx_at(g_at(dr, w, j), xhat_at(xr[j], m, r), sg, sgx, r, C);
    if (upstream) v = total_grad_at(v, upstream[row * C + j]);
    dx[row * C + j] = v;
    if (branch_grad) store(branch_grad + row * C, j, v);
  }
}

template <class D>
__global__ void __launch_bounds__(kColumnsPerBlock)
    layer_norm_weight_chunks_kernel(const D* dy, const float* x, const float* mean,
                                    const float* rstd, int64_t rows, int64_t C, float* partials) {
  const int64_t j = int64_t(blockIdx.y) * kColumnsPerBlock + threadIdx.x;
  if (j < C) chunk_sums(dy, x, mean, rstd, rows, C, int64_t(blockIdx.x), j, partials);
}

__global__ void __launch_bounds__(kColumnsPerBlock)
    layer_norm_weight_sum_kernel(const float* partials, int64_t n, int64_t C, float* dw,
                                 float* db) {
  const int64_t j = int64_t(blockIdx.x) * kColumnsPerBlock + threadIdx.x;
  if (j < C) chunks_total(partials, n, C, j, dw, db);
}

const char* launched() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

unsigned row_blocks(int64_t rows) { return unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock); }
unsigned column_blocks(int64_t C) {
  return unsigned((C + kColumnsPerBlock - 1) / kColumnsPerBlock);
}

}  // namespace

// Runs f with the branch's pointer in its type (bf16 as its bits).
template <class T, class F>
const char* with_branch(T* p, Type type, F&& f) {
  using U = std::conditional_t<std::is_const_v<T>, const uint16_t, uint16_t>;
  using V = std::conditional_t<std::is_const_v<T>, const float, float>;
  if (type == Type::bf16) return f(static_cast<U*>(p));
  return f(static_cast<V*>(p));
}

const char* forward_cuda(const float* x, const float* w, const float* b, int64_t rows, int64_t C,
                         void* y, Type y_type, float* mean, float* rstd, const ResidualAdd& add,
                         void* stream) {
  if (rows == 0) return nullptr;
  const auto s = static_cast<cudaStream_t>(stream);
  const dim3 block(kLanes, kRowsPerBlock);
  return with_branch(add.branch, add.branch_type, [&](const auto* branch) {
    if (y_type == Type::bf16)
      layer_norm_forward_kernel<<<row_blocks(rows), block, 0, s>>>(
          x, w, b, rows, C, static_cast<uint16_t*>(y), mean, rstd, add.residual, branch, add.sum);
    else
      layer_norm_forward_kernel<<<row_blocks(rows), block, 0, s>>>(
          x, w, b, rows, C, static_cast<float*>(y), mean, rstd, add.residual, branch, add.sum);
    return launched();
  });
}

const char* backward_cuda(const void* dy, Type dy_type, const float* x, const float* w,
                          const float* mean, const float* rstd, int64_t rows, int64_t C, float* dx,
                          float* partials, float* dw, float* db, const ResidualAdd& add,
                          void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const int64_t n = chunks(rows);
  const dim3 block(kLanes, kRowsPerBlock), chunk_grid(unsigned(n), column_blocks(C));
  if (rows > 0) {
    const char* e = with_branch(add.branch_grad, add.branch_type, [&](auto* branch_grad) {
      if (dy_type == Type::bf16) {
        const auto* d = static_cast<const uint16_t*>(dy);
        layer_norm_backward_kernel<<<row_blocks(rows), block, 0, s>>>(
            d, x, w, mean, rstd, rows, C, dx, add.upstream, branch_grad);
        layer_norm_weight_chunks_kernel<<<chunk_grid, kColumnsPerBlock, 0, s>>>(d, x, mean, rstd,
                                                                                rows, C, partials);
      } else {
        const auto* d = static_cast<const float*>(dy);
        layer_norm_backward_kernel<<<row_blocks(rows), block, 0, s>>>(
            d, x, w, mean, rstd, rows, C, dx, add.upstream, branch_grad);
        layer_norm_weight_chunks_kernel<<<chunk_grid, kColumnsPerBlock, 0, s>>>(d, x, mean, rstd,
                                                                                rows, C, partials);
      }
      return launched();
    });
    if (e) return e;
  }
  layer_norm_weight_sum_kernel<<<column_blocks(C), kColumnsPerBlock, 0, s>>>(partials, n, C, dw,
                                                                             db);
  return launched();
}

}  // namespace wit::model::ln
