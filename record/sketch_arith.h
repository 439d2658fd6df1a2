// The weight sketch's arithmetic that an implementation on another device needs (sketch.h has
// the definition): the shape constants and the block coefficient S_l(b). WIT_KERNEL_HD, and no
// torch or standard library beyond <cstdint>, so a CUDA kernel and the CPU compute one function.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace wit::witness {

constexpr int kSketchLanes = 4;
constexpr int64_t kSketchBlock = 1024;

// S_l(b) = low 32 bits of splitmix64(K_l + b), forced odd (K_l: sketch_block_key(l), sketch.h).
WIT_KERNEL_HD uint32_t sketch_coefficient(uint64_t key, uint64_t block) {
  uint64_t z = key + block + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return uint32_t(z ^ (z >> 31)) | 1u;
}

}  // namespace wit::witness
