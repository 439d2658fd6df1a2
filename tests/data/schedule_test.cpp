// The data schedule: each epoch is a bijection, the inverse inverts, seeds and epochs change the
// order, the documented protocol is what the code computes, and positions_of is exact.
#include "trainer/data/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "core/error.h"
#include "core/sha256.h"

namespace wit::data {
namespace {

// The protocol exactly as schedule.h documents it, written independently of the implementation.
uint64_t reference_at(uint64_t n, uint64_t seed, uint64_t epoch, uint64_t position) {
  unsigned h = 0;
  while (2 * h < 64 && (uint64_t(1) << (2 * h)) < n) ++h;
  uint64_t mask = h == 0 ? 0 : (uint64_t(1) << h) - 1;
  uint64_t keys[8];
  for (uint64_t i = 0; i < 8; ++i) {
    std::string msg = "wit-schedule-v1";
    for (uint64_t v : {seed, epoch, i})
      for (int b = 0; b < 8; ++b) msg.push_back(char(v >> (8 * b)));
    Digest d = sha256(msg);
    keys[i] = 0;
    for (int b = 7; b >= 0; --b) keys[i] = keys[i] << 8 | d[b];
  }
  auto network = [&](uint64_t x) {
    uint64_t l = x >> h, r = x & mask;
    for (int i = 0; i < 8; ++i) {
      uint64_t z = r ^ keys[i];
      z ^= z >> 30;
      z *= 0xbf58476d1ce4e5b9ULL;
      z ^= z >> 27;
      z *= 0x94d049bb133111ebULL;
      z ^= z >> 31;
      uint64_t nr = l ^ (z & mask);
      l = r;
      r = nr;
    }
    return (l << h) | r;
  };
  uint64_t x = network(position);
  while (x >= n) x = network(x);
  return x;
}

TEST(Permutation, is_a_bijection_and_position_of_inverts_it) {
  for (uint64_t n :
       {1ull, 2ull, 3ull, 4ull, 5ull, 7ull, 16ull, 17ull, 1000ull, 4096ull, 4097ull, 65537ull}) {
    Permutation p(n, 1337, 0);
    ASSERT_EQ(p.size(), n);
    std::vector<bool> seen(n, false);
    for (uint64_t pos = 0; pos < n; ++pos) {
      uint64_t id = p.at(pos);
      ASSERT_LT(id, n) << "n=" << n;
      ASSERT_FALSE(seen[id]) << "n=" << n << ": sample " << id << " scheduled twice";
      seen[id] = true;
      ASSERT_EQ(p.position_of(id), pos) << "n=" << n;
    }
  }
}

TEST(Permutation, matches_the_documented_protocol) {
  for (uint64_t n : {1ull, 2ull, 3ull, 10ull, 1000ull, 4097ull, (1ull << 40) + 3}) {
    for (uint64_t epoch : {0ull, 1ull, 7ull}) {
      Permutation p(n, 42, epoch);
      for (uint64_t pos : std::vector<uint64_t>{0, 1, n / 2, n - 1}) {
        if (pos >= n) continue;
        ASSERT_EQ(p.at(pos), reference_at(n, 42, epoch, pos)) << n << " " << pos;
      }
    }
  }
}

TEST(Permutation, seeds_and_epochs_give_different_orders) {
  const uint64_t n = 1000;
  auto order = [&](uint64_t seed, uint64_t epoch) {
    Permutation p(n, seed, epoch);
    std::vector<uint64_t> v(n);
    for (uint64_t i = 0; i < n; ++i) v[i] = p.at(i);
    return v;
  };
  std::vector<uint64_t> base = order(1, 0);
  EXPECT_EQ(order(1, 0), base);  // deterministic
  EXPECT_NE(order(2, 0), base);
  EXPECT_NE(order(1, 1), base);
  EXPECT_NE(order(2, 1), order(1, 1));
  // Shuffled, not a near-identity: few fixed points (about 1 expected).
  size_t fixed = 0;
  for (uint64_t i = 0; i < n; ++i) fixed += base[i] == i;
  EXPECT_LT(fixed, 10u);
  // Early positions are spread over the whole range, not clustered.
  uint64_t first_half = 0;
  for (uint64_t i = 0; i < 100; ++i) first_half += base[i] < n / 2;
  EXPECT_GT(first_half, 25u);
  EXPECT_LT(first_half, 75u);
}

TEST(Permutation, huge_domains_work_without_tables) {
  for (uint64_t n : std::vector<uint64_t>{(1ull << 40) + 3, (1ull << 62) + 1, UINT64_MAX}) {
    Permutation p(n, 9, 3);
    for (uint64_t pos : std::vector<uint64_t>{0, 1, 12345678901ull, n - 1}) {
      uint64_t id = p.at(pos);
      ASSERT_LT(id, n);
      ASSERT_EQ(p.position_of(id), pos);
    }
  }
}

TEST(Permutation, rejects_empty_and_out_of_range) {
  EXPECT_THROW(Permutation(0, 1, 0), Error);
  Permutation p(10, 1, 0);
  EXPECT_THROW(p.at(10), Error);
  EXPECT_THROW(p.position_of(10), Error);
  Permutation one(1, 5, 9);
  EXPECT_EQ(one.at(0), 0u);
  EXPECT_EQ(one.position_of(0), 0u);
}

TEST(Permutation, queries_are_constant_time) {
  Permutation p(1'000'003, 7, 0);
  auto start = std::chrono::steady_clock::now();
  uint64_t sum = 0;
  for (uint64_t i = 0; i < 1'000'000; ++i) sum += p.at(i);
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      1e6;
  EXPECT_GT(sum, 0u);
  // A few hundred ns on an idle core; generous for a loaded CI machine.
  EXPECT_LT(ns, 5000.0) << ns << " ns per query";
  RecordProperty("ns_per_query", std::to_string(ns));
}

TEST(Schedule, sample_at_walks_epochs_in_order) {
  const uint64_t n = 37;
  Schedule s(n, 2024);
  EXPECT_EQ(s.num_samples(), n);
  for (uint64_t e = 0; e < 4; ++e) {
    Permutation p(n, 2024, e);
    std::set<uint64_t> epoch_samples;
    for (uint64_t q = 0; q < n; ++q) {
      ASSERT_EQ(s.sample_at(e * n + q), p.at(q));
      epoch_samples.insert(s.sample_at(e * n + q));
    }
    EXPECT_EQ(epoch_samples.size(), n);  // every sample exactly once per epoch
  }
  EXPECT_THROW(Schedule(0, 1), Error);
}

TEST(Schedule, positions_of_agrees_with_a_brute_force_scan) {
  const uint64_t n = 37;
  Schedule s(n, 99);
  for (uint64_t end : {0ull, 1ull, 36ull, 37ull, 38ull, 100ull, 5 * 37ull}) {
    for (uint64_t id = 0; id < n; ++id) {
      std::vector<uint64_t> expected;
      for (uint64_t p = 0; p < end; ++p)
        if (s.sample_at(p) == id) expected.push_back(p);
      ASSERT_EQ(s.positions_of(id, end), expected) << "id " << id << " end " << end;
    }
  }
  EXPECT_THROW(s.positions_of(n, 10), Error);
}

TEST(Schedule, interleaved_schedules_do_not_share_cached_epochs) {
  Schedule a(100, 1), b(100, 2), c(57, 1);
  for (uint64_t p = 0; p < 300; ++p) {
    EXPECT_EQ(a.sample_at(p), Permutation(100, 1, p / 100).at(p % 100));
    EXPECT_EQ(b.sample_at(p), Permutation(100, 2, p / 100).at(p % 100));
    EXPECT_EQ(c.sample_at(p), Permutation(57, 1, p / 57).at(p % 57));
  }
}

}  // namespace
}  // namespace wit::data
