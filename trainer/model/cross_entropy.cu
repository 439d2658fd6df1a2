// The fused cross-entropy on a GPU: one block a row, its threads the lanes of
// cross_entropy_rows.h, the lanes' pairs combined in that header's fixed tree in shared memory.
// No atomics: a row's bits depend only on its logits and target.
#include <cuda_runtime.h>

#include "trainer/model/cross_entropy_kernels.h"
#include "trainer/model/cross_entropy_rows.h"

namespace wit::model::ce {
namespace {

template <class T>
__global__ void __launch_bounds__(kRowLanes)
    cross_entropy_forward_kernel(const T* logits, const int64_t* targets, int64_t V, float* loss,
                                 float* lse) {
  __shared__ MaxSum lanes[kRowLanes];
  const int64_t row = blockIdx.x;
  const T* x = logits + row * V;
  const int t = int(threadIdx.x);
  lanes[t] = lane_partial(x, V, t);
  __syncthreads();
  for (int s = kRowLanes / 2; s > 0; s /= 2) {
    if (t < s) tree_level(lanes, t, s);
    __syncthreads();
  }
  if (t == 0) row_result(lanes[0], x, V, targets[row], &loss[row], &lse[row]);
}

template <class T>
__global__ void __launch_bounds__(kRowLanes)
    cross_entropy_backward_kernel(const T* logits, const int64_t* targets, const float* lse,
                                  const float* grad, int64_t V, T* grad_logits) {
  const int64_t row = blockIdx.x;
  const T* x = logits + row * V;
  T* d = grad_logits + row * V;
  const int64_t target = targets[row];
  const float l = lse[row], g = row_grad(target, V, grad[row]);
  for (int64_t j = threadIdx.x; j < V; j += kRowLanes)
    store(d, j, grad_at(load(x, j), l, j == target, g));
}

const char* launched() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

}  // namespace

const char* forward_cuda(const void* logits, LogitType type, const int64_t* targets, int64_t rows,
                         int64_t V, float* loss, float* lse, void* stream) {
  if (rows == 0) return nullptr;
  const auto s = static_cast<cudaStream_t>(stream);
  if (type == LogitType::bf16)
    cross_entropy_forward_kernel<<<dim3(unsigned(rows)), kRowLanes, 0, s>>>(
        static_cast<const uint16_t*>(logits), targets, V, loss, lse);
  else
    cross_entropy_forward_kernel<<<dim3(unsigned(rows)), kRowLanes, 0, s>>>(
        static_cast<const float*>(logits), targets, V, loss, lse);
  return launched();
}

const char* backward_cuda(const void* logits, LogitType type, const int64_t* targets,
                          const float* lse, const float* grad, int64_t rows, int64_t V,
                          void* grad_logits, void* stream) {
  if (rows == 0) return nullptr;
  const auto s = static_cast<cudaStream_t>(stream);
  if (type == LogitType::bf16)
    cross_entropy_backward_kernel<<<dim3(unsigned(rows)), kRowLanes, 0, s>>>(
        static_cast<const uint16_t*>(logits), targets, lse, grad, V,
        static_cast<uint16_t*>(grad_logits));
  else
    cross_entropy_backward_kernel<<<dim3(unsigned(rows)), kRowLanes, 0, s>>>(
        static_cast<const float*>(logits), targets, lse, grad, V, static_cast<float*>(grad_logits));
  return launched();
}

}  // namespace wit::model::ce
