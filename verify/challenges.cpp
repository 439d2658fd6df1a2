// Challenge draws and the bounds they give (verify/challenges.h).
#include "verify/challenges.h"

#include <cmath>

#include "core/error.h"

namespace wit::witness {

double detection_probability(double f, int64_t c) { return 1.0 - std::pow(1.0 - f, double(c)); }

int64_t challenges_for(double f, double p) {
  if (!(f > 0 && f <= 1) || !(p >= 0 && p < 1))
    fail("--target must be in (0, 1] and --confidence in [0, 1), got {} and {}", f, p);
  if (f == 1) return 1;
  return std::max<int64_t>(1, int64_t(std::ceil(std::log(1 - p) / std::log(1 - f))));
}

// Draw i: uniform in [0, n), by rejection from SHA-256(key ‖ i ‖ j), so no index is favoured.
uint64_t draw_below(const Digest& key, uint64_t i, uint64_t n) {
  const uint64_t limit = (~uint64_t(0) / n) * n;
  for (uint64_t j = 0;; ++j) {
    const uint64_t x = digest_prefix_u64(Sha256()
                                             .update("wit-challenge-draw-v1")
                                             .update(key.data(), key.size())
                                             .update_u64(i)
                                             .update_u64(j)
                                             .finish());
    if (x < limit) return x % n;
  }
}

Digest fiat_shamir_key(const Heads& signed_head) {
  const Digest head = head_hash(signed_head);
  return Sha256().update("wit-challenge-fs-v1").update(head.data(), head.size()).finish();
}

std::vector<uint64_t> draw_segments(const Digest& key, int64_t c, uint64_t segments) {
  std::vector<uint64_t> out;
  if (segments <= 2) return out;
  for (int64_t i = 0; i < c; ++i) out.push_back(1 + draw_below(key, uint64_t(i), segments - 2));
  return out;
}

const char* challenge_kind_name(ChallengeSource s) {
  switch (s) {
    case ChallengeSource::VerifierRandom:
      return "verifier-random";
    case ChallengeSource::VerifierSeed:
      return "verifier-seed";
    case ChallengeSource::FiatShamir:
      return "fiat-shamir";
  }
  return "?";
}

double fiat_shamir_bound(double f, int64_t c, int grinding_bits) {
  // 1 - 2^g (1 - f)^c, computed in logarithms: 2^40 (1 - f)^c overflows nothing this way.
  if (f >= 1) return 1.0;
  const double log_escape = double(grinding_bits) * std::log(2.0) + double(c) * std::log1p(-f);
  return log_escape >= 0 ? 0.0 : -std::expm1(log_escape);
}

}  // namespace wit::witness
