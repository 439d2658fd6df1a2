// The serial definition the collective tests compare every backend against, and inputs that
// make a wrong summation order visible in the bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace wit::dist::testing {

// Rank r's contribution: values of wildly different magnitudes, so a different summation
// order shows in the bits.
inline std::vector<float> contribution(int rank, int64_t n) {
  std::mt19937 rng(uint32_t(1000 + rank));
  std::uniform_real_distribution<float> mant(-1, 1);
  std::uniform_int_distribution<int> ex(-24, 24);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = std::ldexp(mant(rng), ex(rng));
  return v;
}

// The canonical tree over a power-of-two number of ranks: pairs (0,1), (2,3), ... then pairs
// of pairs.
inline float tree_over_ranks(const std::vector<std::vector<float>>& parts, int64_t i) {
  std::vector<float> level;
  for (auto& p : parts) level.push_back(p[size_t(i)]);
  while (level.size() > 1) {
    std::vector<float> next;
    for (size_t r = 0; r < level.size(); r += 2) next.push_back(level[r] + level[r + 1]);
    level = next;
  }
  return level[0];
}

}  // namespace wit::dist::testing
