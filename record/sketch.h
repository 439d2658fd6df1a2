// The weight fingerprint ("wit-sketch-v1"): a linear sketch of the parameters' exact bits.
//
// Lane l (of 4) is  s_l = Σ_i r_l(i) · u_i  (mod 2^32), over every parameter i in the canonical
// flat order, where u_i is the IEEE-754 bit pattern of parameter i and the coefficient
//   r_l(i) = T_l[i mod 1024] · S_l(⌊i / 1024⌋)  (mod 2^32)
// is odd, generated from public constants by global index (definitions in sketch.cpp and
// docs/witness-format.md). Why this shape:
//   - integer arithmetic is associative: any split of the parameters over ranks or shards, summed
//   in
//     any order, gives the same bits, so the fingerprint is the same for every world size and
//     layout;
//   - an odd coefficient is invertible mod 2^32: changing any one parameter's bits changes every
//     lane, with certainty; unrelated states collide with probability about 2^-128;
//   - it costs one multiply-add per parameter and lane (vectorised; about 0.4 ns per parameter
//     with AVX2), so it can run after every step.
// It is a fingerprint, not a commitment: the checkpoint's state hash is the binding commitment.
#pragma once

#include <array>
#include <cstdint>

#include "core/sha256.h"
#include "record/sketch_arith.h"

namespace wit::witness {

using Fingerprint = std::array<uint8_t, 4 * kSketchLanes>;

struct WeightSketch {
  std::array<uint32_t, kSketchLanes> lanes{};
  // Adds another part of the same parameter vector (e.g. another rank's shard).
  WeightSketch& operator+=(const WeightSketch& other);
  // The lanes as 16 little-endian bytes: the `weight_fingerprint` field of a step record.
  Fingerprint bytes() const;
  static WeightSketch from_bytes(const Fingerprint& f);
  bool operator==(const WeightSketch& o) const { return lanes == o.lanes; }
  bool operator!=(const WeightSketch& o) const { return lanes != o.lanes; }
};

// Sketch of parameters [first_index, first_index + count) of the global flat vector, given their
// values. Sum the parts of all ranks to get the whole vector's sketch.
WeightSketch sketch_weights(const float* values, int64_t first_index, int64_t count);

// The definition's constants, for an implementation on another device (trainer/device_ops.h):
// T_l (kSketchBlock odd words), S_l(block), and K_l, the key of S_l (sketch_arith.h).
const uint32_t* sketch_table(int lane);
uint32_t sketch_block_coefficient(int lane, uint64_t block);
uint64_t sketch_block_key(int lane);

}  // namespace wit::witness
