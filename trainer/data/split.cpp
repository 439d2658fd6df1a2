// Train / validation assignment by keyed content hash (protocol in split.h).
#include "trainer/data/split.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace wit::data {

uint64_t split_key(uint64_t seed, const Digest& document_sha256) {
  Sha256 h;
  h.update("wit-split-v1").update_u64(seed).update(document_sha256.data(), document_sha256.size());
  return digest_prefix_u64(h.finish());
}

std::vector<uint8_t> assign_splits(const std::vector<Digest>& document_sha256, uint64_t seed,
                                   double val_fraction) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    fail("val_fraction must be in [0, 1), got {}", val_fraction);
  // val_fraction * 2^64 is exact (a power-of-two scaling) and at most 2^64 - 2^11, so its
  // ceiling is an exact uint64_t; key < x  <=>  key < ceil(x) for integer keys.
  uint64_t threshold = static_cast<uint64_t>(std::ceil(std::ldexp(val_fraction, 64)));
  size_t n = document_sha256.size();
  std::vector<uint64_t> keys(n);
  std::vector<uint8_t> splits(n);
  size_t val = 0;
  for (size_t i = 0; i < n; ++i) {
    keys[i] = split_key(seed, document_sha256[i]);
    splits[i] = keys[i] < threshold ? kSplitVal : kSplitTrain;
    val += splits[i] == kSplitVal;
  }
  if (n == 0) return splits;
  if (val_fraction > 0 && n >= 2 && val == 0) {
    uint64_t smallest = *std::min_element(keys.begin(), keys.end());
    for (size_t i = 0; i < n; ++i)
      if (keys[i] == smallest) splits[i] = kSplitVal, ++val;
  }
  if (val == n) {
    uint64_t largest = *std::max_element(keys.begin(), keys.end());
    for (size_t i = 0; i < n; ++i)
      if (keys[i] == largest) splits[i] = kSplitTrain;
  }
  return splits;
}

const char* split_name(uint8_t split) { return split == kSplitVal ? "val" : "train"; }

}  // namespace wit::data
