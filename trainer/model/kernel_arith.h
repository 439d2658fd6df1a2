// What wit's own kernels (cross_entropy_rows.h, layer_norm_rows.h) share on both sides: bf16 as
// its fp32 bit pattern (their functions are WIT_KERNEL_HD, core/host_device.h).
// No torch: nvcc compiles it without torch's headers.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace wit::model::kernel {

// bf16 is the upper half of an fp32 bit pattern: widening is exact.
WIT_KERNEL_HD float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

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

// Values are fp32 (float) or bf16 (its bits, uint16_t), computed on in fp32.
WIT_KERNEL_HD float load(const float* p, int64_t i) { return p[i]; }
WIT_KERNEL_HD float load(const uint16_t* p, int64_t i) { return bf16_to_float(p[i]); }
WIT_KERNEL_HD void store(float* p, int64_t i, float v) { p[i] = v; }
WIT_KERNEL_HD void store(uint16_t* p, int64_t i, float v) { p[i] = float_to_bf16(v); }

}  // namespace wit::model::kernel
