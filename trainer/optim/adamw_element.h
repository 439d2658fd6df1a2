// The arithmetic of one AdamW element and of one gradient-norm chunk, written once for both the
// CPU loops (adamw.cpp) and the fused CUDA kernels (adamw.cu, optim.kernels = fused). Only IEEE
// additions, multiplications, divisions and square roots, each correctly rounded on both sides
// and never contracted into a fused multiply-add (-ffp-contract=off here, --fmad=false there):
// a GPU running these gives the CPU's bits. No torch: nvcc compiles it without torch's headers.
#pragma once

#include <cstdint>

#include "core/host_device.h"

#ifndef __CUDA_ARCH__
#include <cmath>
#endif

namespace wit::optim {

// The fp32 scalars of an AdamW update at step t (adamw_scalars in adamw.h computes them).
struct AdamWScalars {
  float b1, b2, one_b1, one_b2, step_size, bc2_sqrt, decay, eps;
};

// One element: m = b1·m + (1−b1)·g;  v = b2·v + (1−b2)·g²;
// p = p·d − step_size·m / (sqrt(v)/sqrt(bc2) + eps), where d is k.decay or 1.
WIT_KERNEL_HD void adamw_element(float& p, float g, float& m, float& v, float d,
                                 const AdamWScalars& k) {
  const float mi = k.b1 * m + k.one_b1 * g;
  const float vi = k.b2 * v + k.one_b2 * (g * g);
  m = mi;
  v = vi;
#ifdef __CUDA_ARCH__
  const float root = sqrtf(vi);
#else
  const float root = std::sqrt(vi);
#endif
  const float denom = root / k.bc2_sqrt + k.eps;
  p = p * d - k.step_size * (mi / denom);
}

// x² in double: exact (24-bit significands give at most 48 bits, and no fp32 square leaves
// double's range), so only a sum of squares rounds.
WIT_KERNEL_HD double square(float x) { return double(x) * double(x); }

// The squares of g[b, e) summed in double, left to right: one chunk's partial of the norm.
WIT_KERNEL_HD double sum_of_squares(const float* g, int64_t b, int64_t e) {
  double s = 0.0;
  for (int64_t i = b; i < e; ++i) s += square(g[i]);
  return s;
}

}  // namespace wit::optim
