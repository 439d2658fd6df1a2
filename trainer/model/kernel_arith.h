// What wit's own kernels (cross_entropy_rows.h, layer_norm_rows.h, bias_gelu_rows.h) share on
// both sides: bf16 as its fp32 bit pattern, and e^x from IEEE-rounded operations alone (their
// functions are WIT_KERNEL_HD, core/host_device.h).
// No torch: nvcc compiles it without torch's headers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace wit::model::kernel {

WIT_KERNEL_HD float float_from_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// bf16 is the upper half of an fp32 bit pattern: widening is exact.
WIT_KERNEL_HD float bf16_to_float(uint16_t b) { return float_from_bits(uint32_t(b) << 16); }

// Round to nearest, ties to even; NaN becomes 0x7FC0 (c10::BFloat16's rounding).
WIT_KERNEL_HD uint16_t float_to_bf16(float f) {
  if (f != f) return uint16_t(0x7FC0);
#ifdef __CUDA_ARCH__
  const uint32_t u = __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
#endif
  return uint16_t((u + (((u >> 16) & 1u) + 0x7FFFu)) >> 16);
}

// 2^k for -126 <= k <= 127, exactly.
WIT_KERNEL_HD float pow2(int k) { return float_from_bits(uint32_t(k + 127) << 23); }

// e^x from +, -, *, / and exact scalings by powers of two alone, so that every CPU and GPU give
// the same bits (libm's expf and CUDA's round differently in their last bits): x = k ln 2 + r,
// with ln 2 in two parts (k times the first is exact for |k| <= 150), e^r to r^7 by Horner
// (|r| <= 0.35: the truncation is below 10^-8 relatively), then 2^k in two exact halves so a
// subnormal result is rounded once. Within 1 ulp of e^x (tests/train/bias_gelu_test.cpp); NaN stays
// NaN.
WIT_KERNEL_HD float exp_of(float x) {
  if (x != x) return x;
  if (x > 88.72283935546875f) return INFINITY;     // e^x above FLT_MAX (this bound itself: inf too)
  if (x < -103.97208404541015625f) return 0.0f;    // below ln of half the smallest subnormal
  const float t = x * 1.44269502162933349609375f;  // x / ln 2
  const int k = int(t < 0.0f ? t - 0.5f : t + 0.5f);
  const float kf = float(k);
  const float r = (x - kf * 0.693145751953125f) - kf * 1.428606765330187045e-06f;
  float p = 1.98412698e-4f;  // 1/7!
  p = p * r + 1.38888889e-3f;
  p = p * r + 8.33333333e-3f;
  p = p * r + 4.16666667e-2f;
  p = p * r + 1.66666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int k1 = k / 2;
  return p * pow2(k1) * pow2(k - k1);
}

// Sums over rows (a bias's or a norm weight's gradient) go in chunks of kChunkRows rows, each in
// row order, then the chunks in order: the same bits whatever the GPU's size.
constexpr int64_t kChunkRows = 64;
WIT_KERNEL_HD int64_t chunks(int64_t rows) { return (rows + kChunkRows - 1) / kChunkRows; }
WIT_KERNEL_HD int64_t chunk_end(int64_t k, int64_t rows) {
  return (k + 1) * kChunkRows < rows ? (k + 1) * kChunkRows : rows;
}

// Values are fp32 (float) or bf16 (its bits, uint16_t), computed on in fp32.
WIT_KERNEL_HD float load(const float* p, int64_t i) { return p[i]; }
WIT_KERNEL_HD float load(const uint16_t* p, int64_t i) { return bf16_to_float(p[i]); }
WIT_KERNEL_HD void store(float* p, int64_t i, float v) { p[i] = v; }
WIT_KERNEL_HD void store(uint16_t* p, int64_t i, float v) { p[i] = float_to_bf16(v); }

}  // namespace wit::model::kernel
