// The keyed Feistel permutation and the epoch-by-epoch schedule built on it (protocol in the
// header). Constructing a permutation costs 8 SHA-256s; each query a few dozen multiplications.
#include "trainer/data/schedule.h"

#include <optional>

#include "core/error.h"
#include "core/sha256.h"

namespace wit::data {

namespace {

uint64_t splitmix64_finaliser(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z;
}

}  // namespace

Permutation::Permutation(uint64_t n, uint64_t seed, uint64_t epoch) : n_(n) {
  if (n == 0) fail("schedule: cannot permute an empty set of samples (n = 0)");
  while (2 * half_bits_ < 64 && (uint64_t(1) << (2 * half_bits_)) < n) ++half_bits_;
  half_mask_ = half_bits_ == 0 ? 0 : (uint64_t(1) << half_bits_) - 1;
  for (int i = 0; i < kRounds; ++i) {
    Sha256 h;
    h.update("wit-schedule-v1").update_u64(seed).update_u64(epoch).update_u64(uint64_t(i));
    keys_[i] = digest_prefix_u64(h.finish());
  }
}

uint64_t Permutation::encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (int i = 0; i < kRounds; ++i) {
    uint64_t f = splitmix64_finaliser(right ^ keys_[i]) & half_mask_;
    uint64_t new_right = left ^ f;
    left = right;
    right = new_right;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::decrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (int i = kRounds - 1; i >= 0; --i) {
    uint64_t f = splitmix64_finaliser(left ^ keys_[i]) & half_mask_;
    uint64_t old_left = right ^ f;
    right = left;
    left = old_left;
  }
  return (left << half_bits_) | right;
}

// Cycle walking: the network permutes [0, 2^(2h)); following the cycle of a point < n until it
// re-enters [0, n) permutes [0, n). The domain is < 4n, so under 4 steps are expected.
uint64_t Permutation::at(uint64_t position) const {
  if (position >= n_) fail("schedule: position {} is outside an epoch of {} samples", position, n_);
  uint64_t x = encrypt(position);
  while (x >= n_) x = encrypt(x);
  return x;
}

uint64_t Permutation::position_of(uint64_t id) const {
  if (id >= n_) fail("schedule: sample {} does not exist (there are {} samples)", id, n_);
  uint64_t x = decrypt(id);
  while (x >= n_) x = decrypt(x);
  return x;
}

Schedule::Schedule(uint64_t num_samples, uint64_t seed) : num_samples_(num_samples), seed_(seed) {
  if (num_samples == 0) fail("schedule: the training split holds no samples");
}

uint64_t Schedule::sample_at(uint64_t global_position) const {
  // Consecutive positions share an epoch, so keep its permutation: the 8 round-key hashes are
  // paid once per epoch, not per sample. Per thread, so Schedule stays a plain const value.
  struct Cached {
    uint64_t n, seed, epoch;
    Permutation permutation;
  };
  thread_local std::optional<Cached> cache;
  uint64_t epoch = global_position / num_samples_;
  if (!cache || cache->n != num_samples_ || cache->seed != seed_ || cache->epoch != epoch)
    cache.emplace(Cached{num_samples_, seed_, epoch, Permutation(num_samples_, seed_, epoch)});
  return cache->permutation.at(global_position % num_samples_);
}

std::vector<uint64_t> Schedule::positions_of(uint64_t sample_id, uint64_t end_position) const {
  if (sample_id >= num_samples_)
    fail("schedule: sample {} does not exist (there are {} samples)", sample_id, num_samples_);
  std::vector<uint64_t> out;
  uint64_t epochs = end_position / num_samples_ + (end_position % num_samples_ != 0);
  for (uint64_t e = 0; e < epochs; ++e) {
    uint64_t p = e * num_samples_ + epoch(e).position_of(sample_id);
    if (p < end_position) out.push_back(p);
  }
  return out;
}

}  // namespace wit::data
