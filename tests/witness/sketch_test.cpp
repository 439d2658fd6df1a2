#include "record/sketch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/sha256.h"

namespace wit::witness {
namespace {

// The sketch written out from its definition (docs/witness-format.md), one coefficient at a time:
// the optimised implementation must agree with it bit for bit.
uint32_t table_word(int lane, int64_t j) {
  const uint64_t word = uint64_t(lane) * 1024 + uint64_t(j);  // index into the T stream
  const Digest d = Sha256().update("wit-sketch-v1/T").update_u64(word / 8).finish();
  const size_t b = (word % 8) * 4;
  return (uint32_t(d[b]) | uint32_t(d[b + 1]) << 8 | uint32_t(d[b + 2]) << 16 |
          uint32_t(d[b + 3]) << 24) |
         1u;
}

uint32_t block_word(int lane, uint64_t block) {
  const uint64_t key =
      digest_prefix_u64(Sha256().update("wit-sketch-v1/S").update_u64(uint64_t(lane)).finish());
  uint64_t z = key + block + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return uint32_t(z ^ (z >> 31)) | 1u;
}

WeightSketch reference(const std::vector<float>& v, int64_t first) {
  WeightSketch s;
  for (int l = 0; l < kSketchLanes; ++l)
    for (size_t k = 0; k < v.size(); ++k) {
      const int64_t i = first + int64_t(k);
      uint32_t u;
      std::memcpy(&u, &v[k], 4);
      s.lanes[l] += table_word(l, i % 1024) * block_word(l, uint64_t(i / 1024)) * u;
    }
  return s;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

TEST(WeightSketch, MatchesItsDefinition) {
  const auto v = random_values(2600, 1);
  for (int64_t first : {int64_t(0), int64_t(1), int64_t(1000), int64_t(5 * 1024 + 7)})
    EXPECT_EQ(sketch_weights(v.data(), first, int64_t(v.size())), reference(v, first))
        << "first index " << first;
}

TEST(WeightSketch, SameForAnySplitOfTheParameters) {
  const auto v = random_values(100000, 2);
  const WeightSketch whole = sketch_weights(v.data(), 0, int64_t(v.size()));
  std::mt19937 rng(3);
  for (int ranks : {2, 3, 4, 7, 8}) {
    // Uneven shards at arbitrary (non-block-aligned) boundaries, summed in reverse order.
    std::vector<int64_t> cuts = {0, int64_t(v.size())};
    for (int r = 1; r < ranks; ++r) cuts.push_back(int64_t(rng() % v.size()));
    std::sort(cuts.begin(), cuts.end());
    WeightSketch sum;
    for (size_t k = cuts.size() - 1; k > 0; --k)
      sum += sketch_weights(v.data() + cuts[k - 1], cuts[k - 1], cuts[k] - cuts[k - 1]);
    EXPECT_EQ(sum, whole) << ranks << " shards";
  }
}

TEST(WeightSketch, AnySingleChangeChangesEveryLane) {
  auto v = random_values(50000, 4);
  const WeightSketch before = sketch_weights(v.data(), 0, int64_t(v.size()));
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t i = rng() % v.size();
    const int bit = int(rng() % 32);
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    const uint32_t flipped = u ^ (1u << bit);
    std::memcpy(&v[i], &flipped, 4);
    const WeightSketch after = sketch_weights(v.data(), 0, int64_t(v.size()));
    for (int l = 0; l < kSketchLanes; ++l)
      EXPECT_NE(after.lanes[l], before.lanes[l]) << "parameter " << i << " bit " << bit;
    std::memcpy(&v[i], &u, 4);
  }
  EXPECT_EQ(sketch_weights(v.data(), 0, int64_t(v.size())), before);
}

TEST(WeightSketch, SeesNegativeZeroAndSwappedValues) {
  std::vector<float> v = {0.0f, 1.0f, 2.0f, 3.0f};
  const WeightSketch s = sketch_weights(v.data(), 0, 4);
  v[0] = -0.0f;  // numerically equal, different bits: a different state
  EXPECT_NE(sketch_weights(v.data(), 0, 4), s);
  std::vector<float> swapped = {0.0f, 2.0f, 1.0f, 3.0f};
  EXPECT_NE(sketch_weights(swapped.data(), 0, 4), s);
}

TEST(WeightSketch, BytesRoundTrip) {
  const auto v = random_values(3000, 6);
  const WeightSketch s = sketch_weights(v.data(), 0, 3000);
  EXPECT_EQ(WeightSketch::from_bytes(s.bytes()), s);
  EXPECT_EQ(s.bytes()[0], uint8_t(s.lanes[0]));  // little-endian lanes
}

}  // namespace
}  // namespace wit::witness
