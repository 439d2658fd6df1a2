// The data order: which sample is trained at which global position, as a keyed pseudo-random
// permutation per epoch. O(1) per query in both directions; the order is never materialised.
//
// Protocol "wit-schedule-v1" (a verifier re-derives it; changing it changes every run's data):
//   n samples, seed s. Global position p is position q = p mod n of epoch e = p div n.
//   Each epoch is an independent permutation P_e of [0, n):
//   - domain: the smallest even bit width 2h with 2^(2h) >= n (h = 0 for n = 1); an element x
//     is split into halves L = x >> h and R = x & (2^h - 1);
//   - 8 balanced Feistel rounds i = 0..7: (L, R) <- (R, L xor F(R, k_i)), then x = L << h | R;
//   - round function F(r, k) = splitmix64_finaliser(r xor k) & (2^h - 1), where the finaliser is
//       z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27; z *= 0x94d049bb133111eb; z ^= z >> 31;
//   - round keys k_i = first 8 bytes, little-endian, of
//       SHA-256("wit-schedule-v1" || u64le(s) || u64le(e) || u64le(i));
//   - cycle walking: P_e(q) = E(q), repeated while the result is >= n (E the Feistel network).
//     The inverse walks the inverse network the same way.
//   sample_at(p) = P_e(q).
//
//   Schedule schedule(num_samples, seed);
//   uint64_t sample = schedule.sample_at(step * batch + i);
//   std::vector<uint64_t> when = schedule.positions_of(sample, end_position);
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace wit::data {

class Permutation {
 public:
  static constexpr int kRounds = 8;

  // n >= 1 (throws wit::Error for n = 0).
  Permutation(uint64_t n, uint64_t seed, uint64_t epoch);

  uint64_t size() const { return n_; }
  uint64_t at(uint64_t position) const;     // position -> sample id
  uint64_t position_of(uint64_t id) const;  // sample id -> position: the inverse of at()

 private:
  uint64_t encrypt(uint64_t x) const;
  uint64_t decrypt(uint64_t x) const;

  uint64_t n_;
  unsigned half_bits_ = 0;
  uint64_t half_mask_ = 0;
  std::array<uint64_t, kRounds> keys_{};
};

class Schedule {
 public:
  // num_samples >= 1 (throws wit::Error for 0).
  Schedule(uint64_t num_samples, uint64_t seed);

  uint64_t num_samples() const { return num_samples_; }
  uint64_t seed() const { return seed_; }
  // Epoch e's permutation: for callers that walk many positions of one epoch.
  Permutation epoch(uint64_t e) const { return Permutation(num_samples_, seed_, e); }

  // The sample trained at global position p (epoch p / n, position p % n within it).
  uint64_t sample_at(uint64_t global_position) const;
  // Every global position < end_position at which `sample_id` is scheduled, ascending: one per
  // epoch that has begun. Throws wit::Error if sample_id >= num_samples().
  std::vector<uint64_t> positions_of(uint64_t sample_id, uint64_t end_position) const;

 private:
  uint64_t num_samples_;
  uint64_t seed_;
};

}  // namespace wit::data
