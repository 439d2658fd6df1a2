#include "record/sketch.h"

#include <cstring>
#include <vector>

#include "core/error.h"

namespace wit::witness {

namespace {

// T_l[j]: 4-byte little-endian words of the stream SHA-256("wit-sketch-v1/T" ‖ u64 k), k = 0, 1, …,
// taken in order (lane 0's 1024 words first), each forced odd.
struct Tables {
  std::array<std::array<uint32_t, kSketchBlock>, kSketchLanes> t;
  std::array<uint64_t, kSketchLanes> s_key;
  Tables() {
    std::vector<uint32_t> words;
    for (uint64_t k = 0; words.size() < size_t(kSketchLanes * kSketchBlock); ++k) {
      const Digest d = Sha256().update("wit-sketch-v1/T").update_u64(k).finish();
      for (size_t b = 0; b < d.size(); b += 4)
        words.push_back(uint32_t(d[b]) | uint32_t(d[b + 1]) << 8 | uint32_t(d[b + 2]) << 16 |
                        uint32_t(d[b + 3]) << 24);
    }
    for (int l = 0; l < kSketchLanes; ++l)
      for (int64_t j = 0; j < kSketchBlock; ++j) t[l][j] = words[size_t(l * kSketchBlock + j)] | 1u;
    for (int l = 0; l < kSketchLanes; ++l)
      s_key[l] = digest_prefix_u64(Sha256().update("wit-sketch-v1/S").update_u64(l).finish());
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

// Σ t[j]·u[j] mod 2^32 over one stretch of a block: the loop the compiler vectorises, cloned for
// the vector units the CPU has (integer arithmetic: every clone gives the same bits).
__attribute__((target_clones("avx512f", "avx2", "default"))) uint32_t dot(const uint32_t* t,
                                                                          const float* v,
                                                                          int64_t n) {
  uint32_t s = 0;
  for (int64_t j = 0; j < n; ++j) {
    uint32_t u;
    std::memcpy(&u, v + j, sizeof u);
    s += t[j] * u;
  }
  return s;
}

}  // namespace

const uint32_t* sketch_table(int lane) { return tables().t[size_t(lane)].data(); }

uint32_t sketch_block_coefficient(int lane, uint64_t block) {
  return sketch_coefficient(tables().s_key[size_t(lane)], block);
}

uint64_t sketch_block_key(int lane) { return tables().s_key[size_t(lane)]; }

WeightSketch& WeightSketch::operator+=(const WeightSketch& o) {
  for (int l = 0; l < kSketchLanes; ++l) lanes[l] += o.lanes[l];
  return *this;
}

Fingerprint WeightSketch::bytes() const {
  Fingerprint d{};
  for (int l = 0; l < kSketchLanes; ++l)
    for (int b = 0; b < 4; ++b) d[size_t(4 * l + b)] = uint8_t(lanes[l] >> (8 * b));
  return d;
}

WeightSketch WeightSketch::from_bytes(const Fingerprint& d) {
  WeightSketch s;
  for (int l = 0; l < kSketchLanes; ++l)
    for (int b = 0; b < 4; ++b) s.lanes[l] |= uint32_t(d[size_t(4 * l + b)]) << (8 * b);
  return s;
}

WeightSketch sketch_weights(const float* values, int64_t first, int64_t count) {
  WIT_CHECK(first >= 0 && count >= 0, "the weight sketch of {} parameters from index {}", count,
            first);
  const Tables& tab = tables();
  WeightSketch out;
  int64_t i = first;
  const int64_t end = first + count;
  while (i < end) {
    const int64_t block = i / kSketchBlock, j0 = i % kSketchBlock;
    const int64_t n = std::min(kSketchBlock - j0, end - i);
    const float* v = values + (i - first);
    for (int l = 0; l < kSketchLanes; ++l)
      out.lanes[l] += dot(tab.t[l].data() + j0, v, n) * sketch_coefficient(tab.s_key[l], block);
    i += n;
  }
  return out;
}

}  // namespace wit::witness
