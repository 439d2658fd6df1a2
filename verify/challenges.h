// Where a verifier's challenges come from, how segments are drawn from that randomness, and the
// detection bounds the draws give (docs/verify.md, "The guarantee"). No torch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sha256.h"
#include "record/format.h"

namespace wit::witness {

// Where the challenges' randomness comes from.
enum class ChallengeSource {
  VerifierRandom,  // the OS random source, read after the run was received (the default)
  VerifierSeed,    // a seed the verifier chose (reproducible audits)
  FiatShamir,      // SHA-256 of the signed head: anyone recomputes it, and so can the trainer
};
const char* challenge_kind_name(ChallengeSource s);

// The draws: c segment indices, each uniform over the middle segments [1, segments - 1) (none
// when there are no middle segments), from a 32-byte key: the verifier's random bytes, a seed's
// hash, or, for Fiat–Shamir, fiat_shamir_key of the signed head. Public, so anyone (a trainer
// too) can recompute Fiat–Shamir draws.
uint64_t draw_below(const Digest& key, uint64_t i, uint64_t n);
Digest fiat_shamir_key(const Heads& signed_head);
std::vector<uint64_t> draw_segments(const Digest& key, int64_t c, uint64_t segments);

// The probability that c challenges catch a run with a fraction f of unfaithful steps.
double detection_probability(double f, int64_t c);
// The same for Fiat–Shamir challenges against a trainer who tries up to 2^bits logs and keeps
// one that escapes: 1 - 2^bits (1 - f)^c, or 0 where that is negative (no guarantee).
double fiat_shamir_bound(double f, int64_t c, int grinding_bits);
// The fewest challenges that catch a fraction f with probability >= p.
int64_t challenges_for(double f, double p);

}  // namespace wit::witness
