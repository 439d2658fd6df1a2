// The fused layer norm's arithmetic, one definition for its CUDA kernels (layer_norm.cu) and for
// the CPU (layer_norm.cpp). No torch: nvcc compiles it without torch's headers.
//
// Rows of C fp32 values. Forward, per row: kLanes lanes, lane t summing columns t, t + kLanes, ...
// in order; the lanes' sums combine in a fixed tree (lane t takes in lane t + s for s = kLanes/2,
// ..., 2, 1). mean = sum / C; the same lanes and tree sum (x - mean)^2, var = that / C, and
// rstd = 1 / sqrt(var + eps). y = (x - mean) * rstd * w + b, in the output's type.
// Backward, per row, with xhat = (x - mean) * rstd and g = dy * w: the lanes and tree sum g and
// g * xhat, and dx = (g - sum(g)/C - xhat * sum(g * xhat)/C) * rstd. The weight's and bias's
// gradients are sums over rows: each chunk of kChunkRows rows sums dy * xhat and dy per column in
// row order, then the chunks' sums are added in chunk order.
// A CUDA warp is one row's lanes; the CPU runs the same lanes in a loop. Only +, -, *, / and sqrt
// are used, which IEEE rounds exactly on both (nvcc with --fmad=false, the CPU with
// -ffp-contract=off): the kernels' bits are this header's, whatever GPU or compiler runs it (a
// NaN's encoding aside: the GPU writes the canonical one, the CPU keeps the input's).
#pragma once

#include <cmath>
#include <cstdint>

#include "trainer/model/kernel_arith.h"

namespace wit::model::ln {

constexpr int kLanes = 32;
constexpr float kEps = 1e-5f;  // GPT-2's

using kernel::chunk_end;
using kernel::chunks;
using kernel::kChunkRows;
using kernel::load;
using kernel::store;

WIT_KERNEL_HD float xhat_at(float x, float mean, float rstd) { return (x - mean) * rstd; }

// Lane `lane`'s sum of f(j) over its columns of a row of C.
template <class F>
WIT_KERNEL_HD float lane_sum(int64_t C, int lane, F f) {
  float s = 0.0f;
  for (int64_t j = lane; j < C; j += kLanes) s += f(j);
  return s;
}

// The lanes' four sums: of x, of (x - mean)^2, of g = dy * w, and of g * xhat.
WIT_KERNEL_HD float lane_sum_x(const float* x, int64_t C, int lane) {
  return lane_sum(C, lane, [&](int64_t j) { return x[j]; });
}
WIT_KERNEL_HD float lane_sum_sq(const float* x, int64_t C, int lane, float mean) {
  return lane_sum(C, lane, [&](int64_t j) {
    const float d = x[j] - mean;
    return d * d;
  });
}
template <class D>
WIT_KERNEL_HD float g_at(const D* dy, const float* w, int64_t j) {
  return load(dy, j) * w[j];
}
template <class D>
WIT_KERNEL_HD float lane_sum_g(const D* dy, const float* w, int64_t C, int lane) {
  return lane_sum(C, lane, [&](int64_t j) { return g_at(dy, w, j); });
}
template <class D>
WIT_KERNEL_HD float lane_sum_gx(const D* dy, const float* w, const float* x, float mean, float rstd,
                                int64_t C, int lane) {
  return lane_sum(C, lane, [&](int64_t j) { return g_at(dy, w, j) * xhat_at(x[j], mean, rstd); });
}

// One level of the lanes' tree: lane t (t < s) takes in lane t + s.
WIT_KERNEL_HD void tree_level(float* lanes, int t, int s) { lanes[t] = lanes[t] + lanes[t + s]; }

WIT_KERNEL_HD float mean_of(float sum, int64_t C) { return sum / float(C); }
WIT_KERNEL_HD float rstd_of(float sum_sq, int64_t C) {
  return 1.0f / sqrtf(sum_sq / float(C) + kEps);
}

WIT_KERNEL_HD float y_at(float x, float mean, float rstd, float w, float b) {
  return xhat_at(x, mean, rstd) * w + b;
}

// The residual add fused in front of a layer norm: the branch widened to fp32 and added, as
// libtorch adds an fp32 and a bf16 tensor; in the backward, the gradient reaching the sum from
// after the block added to the layer norm's (autograd's sum of the two: + commutes, so the bits
// are the unfused graph's).
WIT_KERNEL_HD float sum_at(float residual, float branch) { return residual + branch; }
WIT_KERNEL_HD float total_grad_at(float dx, float upstream) { return dx + upstream; }

// dx from the row's sums of g and g * xhat.
WIT_KERNEL_HD float dx_at(float g, float xhat, float sum_g, float sum_gx, float rstd, int64_t C) {
  return (g - sum_g / float(C) - xhat * (sum_gx / float(C))) * rstd;
}

// Chunk k's sums, in row order, of dy * xhat (into partials[k, j]) and dy (partials[n + k, j])
// at column j; partials is (2n, C) for n = chunks(rows).
template <class D>
WIT_KERNEL_HD void chunk_sums(const D* dy, const float* x, const float* mean, const float* rstd,
                              int64_t rows, int64_t C, int64_t k, int64_t j, float* partials) {
  float sw = 0.0f, sb = 0.0f;
  for (int64_t r = k * kChunkRows; r < chunk_end(k, rows); ++r) {
    const float d = load(dy + r * C, j);
    sw += d * xhat_at(x[r * C + j], mean[r], rstd[r]);
    sb += d;
  }
  partials[k * C + j] = sw;
  partials[(chunks(rows) + k) * C + j] = sb;
}

// The weight's and bias's gradients at column j: the n chunks' sums added in chunk order.
WIT_KERNEL_HD void chunks_total(const float* partials, int64_t n, int64_t C, int64_t j, float* dw,
                                float* db) {
  float sw = 0.0f, sb = 0.0f;
  for (int64_t k = 0; k < n; ++k) {
    sw += partials[k * C + j];
    sb += partials[(n + k) * C + j];
  }
  dw[j] = sw;
  db[j] = sb;
}

}  // namespace wit::model::ln
