// The fused bias and GELU's arithmetic (model.gelu = fused), one definition for its CUDA kernels
// (bias_gelu.cu) and for the CPU (bias_gelu.cpp). No torch: nvcc compiles it without torch's
// headers.
//
// Rows of C values h (the MLP's first matmul, without its bias), fp32 or bf16, and a bias b of C
// fp32 values. Forward, per element: z = h + b, and GPT-2's tanh GELU written as
// gelu(z) = z (1 + tanh u) / 2 = z / (1 + e^(-2u)), u = sqrt(2/pi) (z + 0.044715 z^3),
// in the rows' type. Backward, per element: dz = dy * gelu'(z), with
// gelu'(z) = s + z * 2u' * s * (1 - s), s = 1 / (1 + e^(-2u)), 1 - s = e^(-2u) s,
// written in the rows' type; the bias's gradient sums dz (fp32, before that rounding) over rows:
// each chunk of kChunkRows rows in row order, then the chunks in order.
// e^x is kernel::exp_of, and otherwise only +, -, * and / are used, which IEEE rounds exactly on
// both (nvcc with --fmad=false, the CPU with -ffp-contract=off): the kernels' bits are this
// header's on every GPU and CPU (a NaN's encoding aside).
#pragma once

#include <cmath>
#include <cstdint>

#include "trainer/model/kernel_arith.h"

namespace wit::model::gelu {

constexpr float kSqrt2OverPi = 0.797884560802865f;
constexpr float kCubic = 0.044715f;
constexpr float kCubic3 = 0.134145f;  // 3 * kCubic, the derivative's

using kernel::chunk_end;
using kernel::chunks;
using kernel::kChunkRows;
using kernel::load;
using kernel::store;

WIT_KERNEL_HD float z_at(float h, float b) { return h + b; }

// e^(-2u): 0 for large z, infinite for very negative z.
WIT_KERNEL_HD float e_at(float z) {
  const float u = kSqrt2OverPi * (z + kCubic * (z * z * z));
  return kernel::exp_of(-2.0f * u);
}

// z / (1 + e^(-2u)): z for large z, -0 for very negative z (e infinite), as tanh's form gives.
WIT_KERNEL_HD float gelu_at(float z) { return z / (1.0f + e_at(z)); }

WIT_KERNEL_HD float gelu_grad_at(float z) {
  const float e = e_at(z);
  const float s = 1.0f / (1.0f + e);
  const float one_minus_s = e == INFINITY ? 1.0f : e * s;  // s = 0: inf * 0 would be NaN
  // For |z| above about 1.8e19, z * z overflows and the gradient is NaN, as tanh's form gives.
  const float du = kSqrt2OverPi * (1.0f + kCubic3 * (z * z));
  return s + z * (2.0f * du) * s * one_minus_s;
}

// Forward, chunk k of rows at column j: y = gelu(h + b) in y's type.
template <class H>
WIT_KERNEL_HD void chunk_forward(const H* h, const float* b, int64_t rows, int64_t C, int64_t k,
                                 int64_t j, H* y) {
  for (int64_t r = k * kChunkRows; r < chunk_end(k, rows); ++r)
    store(y, r * C + j, gelu_at(z_at(load(h, r * C + j), b[j])));
}

// Backward, chunk k of rows at column j: dh = dy * gelu'(h + b) in the rows' type (dy's too), and
// the chunk's sum of the fp32 values, in row order, into partials[k, j] (partials: chunks(rows)
// by C).
template <class H>
WIT_KERNEL_HD void chunk_backward(const H* dy, const H* h, const float* b, int64_t rows, int64_t C,
                                  int64_t k, int64_t j, H* dh, float* partials) {
  float sum = 0.0f;
  for (int64_t r = k * kChunkRows; r < chunk_end(k, rows); ++r) {
    const int64_t i = r * C + j;
    const float d = load(dy, i) * gelu_grad_at(z_at(load(h, i), b[j]));
    store(dh, i, d);
    sum += d;
  }
  partials[k * C + j] = sum;
}

// The bias's gradient at column j: the n chunks' sums added in chunk order.
WIT_KERNEL_HD void chunks_total(const float* partials, int64_t n, int64_t C, int64_t j, float* db) {
  float sum = 0.0f;
  for (int64_t k = 0; k < n; ++k) sum += partials[k * C + j];
  db[j] = sum;
}

}  // namespace wit::model::gelu
