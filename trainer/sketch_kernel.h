// The weight sketch (record/sketch.h) as one CUDA kernel (sketch_kernel.cu), on raw device
// pointers: no torch, so nvcc compiles it without torch's headers. Built only with the CUDA path
// (WIT_SKETCH_CUDA_KERNEL); trainer/device_ops.cpp calls it for parameters on a GPU.
#pragma once

#include <cstdint>

#include "record/sketch_arith.h"

namespace wit::cuda {

// K_l for each lane (witness::sketch_block_key).
struct SketchKeys {
  uint64_t key[witness::kSketchLanes];
};

// lanes[l] = Σ T_l[i mod 1024] · S_l(⌊i / 1024⌋) · u_i (mod 2^32) over parameters
// i = first .. first + n − 1, u_i the bit pattern of values[i − first]: the sketch's definition.
// `table` is T on the device (kSketchLanes × kSketchBlock words, lane 0's first). Queues a
// zeroing of `lanes` and the kernel on `stream` (a cudaStream_t); returns nullptr, or the CUDA
// runtime's message for a launch that failed.
const char* weight_sketch(const float* values, int64_t first, int64_t n, const uint32_t* table,
                          SketchKeys keys, uint32_t* lanes, void* stream);

}  // namespace wit::cuda
