// The verdict of `wit verify` from its stages, and the certificate of a certified run: what the
// draws bound and what the checkpoints nobody loaded can be said to be.
#include <fmt/format.h>

#include "core/clock.h"
#include "verify/certificate.h"
#include "verify/challenges.h"
#include "verify/verification.h"

namespace wit::witness::detail {

using nlohmann::json;

void Verification::decide() {
  if (failed_) {
    out_.outcome = Outcome::Rejected;
    for (auto& st : out_.stages)
      if (!st.passed && !(excused_ && st.name == "challenges")) {
        out_.reason = st.name + ": " + st.detail;
        break;
      }
  } else if (o_.tolerance) {
    // Tolerance mode asks for closeness, not equal bits: a declared nondeterminism is no excuse
    // and no obstacle.
    out_.outcome = Outcome::ConsistentWithinTolerance;
    out_.reason =
        fmt::format("replayed within relative tolerance {:.3g}, not bit for bit", *o_.tolerance);
  } else if (!nondeterminism_.empty()) {
    out_.outcome = Outcome::NotReproducible;
    if (out_.reason.empty())
      out_.reason = nondeterminism_ +
                    "; the challenged segments happened to replay exactly, but the unchallenged "
                    "ones need not, so the run cannot be certified";
  } else {
    out_.outcome = Outcome::Certified;
  }
  out_.certified = out_.outcome == Outcome::Certified;
}

// What the draws bound: the probability that a run with a fraction f of bad steps passes.
nlohmann::json Verification::guarantee() const {
  const int64_t c = out_.draws;
  const bool everything = out_.challenged.size() == out_.segments;  // every step recomputed
  const bool fiat_shamir = o_.source == ChallengeSource::FiatShamir;
  json bounds = json::array();
  for (double f : {0.01, 0.05, 0.1, 0.25}) {
    json b = {{"f", f},
              {"rejected_with_probability_at_least",
               everything    ? 1.0
               : fiat_shamir ? fiat_shamir_bound(f, c, o_.grinding_bits)
                             : detection_probability(f, c)}};
    if (fiat_shamir && !everything) b["if_the_trainer_did_not_retry"] = detection_probability(f, c);
    bounds.push_back(b);
  }
  const std::string computed =
      o_.tolerance ? "computed as logged (within the tolerance)" : "computed as logged";
  if (everything)
    return {{"challenges", c},
            {"statement", fmt::format("every segment was replayed: every step was {}", computed)},
            {"bounds", bounds}};
  std::string statement = fmt::format(
      "the first and the last segment were replayed, and {} segments drawn uniformly from the "
      "other {}: a run in which at least a fraction f of the steps were not {} is rejected "
      "with probability >= 1 - (1 - f)^{}",
      c, out_.segments - 2, computed, c);
  if (fiat_shamir)
    statement += fmt::format(
        ", but only against a trainer who did not retry: the challenges follow from the "
        "signed head, which the trainer can vary and re-sign at will; against one who tries "
        "up to 2^{} logs the bound is 1 - 2^{} (1 - f)^{}, and 0 (no guarantee) where that is "
        "negative",
        o_.grinding_bits, o_.grinding_bits, c);
  return {{"challenges", c}, {"statement", statement}, {"bounds", bounds}};
}

// What the certificate may say of the checkpoints nobody loaded: what the structure stage
// showed, and no more.
nlohmann::json Verification::checkpoints_statement() const {
  const Availability& a = out_.availability;
  const int64_t leaf_bytes = checkpoint_leaf_bytes(int64_t(log_->meta.num_params));
  json checkpoints = {{"committed", a.checkpoints},
                      {"leaf_bytes", leaf_bytes},
                      {"leaves_sampled_each", a.whole ? json(nullptr) : json(a.leaves_per_checkpoint)},
                      {"whole", a.whole}};
  const bool whole = a.whole || a.leaves_per_checkpoint == a.leaves_of_checkpoint;
  // Fiat–Shamir leaves are a function of the signed head, which the trainer holds before it hands
  // the run over: it could damage exactly the leaves not drawn, without a single retry.
  checkpoints["statement"] =
      whole ? fmt::format("each of the {} committed checkpoints was read whole and matches its "
                          "committed state hash",
                          a.checkpoints)
      : o_.source == ChallengeSource::FiatShamir
          ? fmt::format(
                "each of the {} committed checkpoints is present at its committed size with a "
                "leaf table that hashes to its committed state hash, and {} of its {}-byte "
                "leaves match that table; those leaves were drawn from the signed head, which "
                "the trainer could compute, so nothing is shown of the others (no bound; "
                "--whole-checkpoints reads them all); the checkpoints a replay loaded were read "
                "whole",
                a.checkpoints, a.leaves_per_checkpoint, leaf_bytes)
          : fmt::format(
                "each of the {} committed checkpoints is present at its committed size "
                "with a leaf table that hashes to its committed state hash, and {} of its "
                "{}-byte leaves, drawn from the challenge source, match that table: a "
                "checkpoint of which a fraction g of the leaves is missing or altered "
                "passes with probability at most (1 - g)^{}; the checkpoints a replay "
                "loaded were read whole",
                a.checkpoints, a.leaves_per_checkpoint, leaf_bytes, a.leaves_per_checkpoint);
  return checkpoints;
}

// The unsigned certificate of a certified (or within-tolerance) run: sign_certificate signs it.
nlohmann::json Verification::certificate() const {
  json checks = json::array();
  for (auto& st : out_.stages)
    checks.push_back({{"stage", st.name}, {"passed", st.passed}, {"detail", st.detail}});
  json source = {{"kind", challenge_kind_name(o_.source)}, {"detail", out_.challenge_source}};
  if (o_.source == ChallengeSource::VerifierSeed) source["seed"] = o_.seed;
  if (o_.source == ChallengeSource::FiatShamir) source["grinding_budget_bits"] = o_.grinding_bits;
  json c = {
      {"format", kCertificateFormat},
      {"run", fs::absolute(o_.run).filename().string()},
      {"model_sha256", to_hex(out_.model_sha256)},
      {"steps", out_.steps},
      {"segments", out_.segments},
      {"segment_steps", K_},
      {"always_replayed_segments", out_.always_replayed},
      {"drawn_segments", out_.drawn},
      {"challenged_segments", out_.challenged},
      {"challenge_source", source},
      {"replayed_on", fmt::format("{} process(es), layout {}", comm_.size(), o_.mode)},
      {"checks", checks},
      {"result", outcome_name(out_.outcome)},
      {"guarantee", guarantee()},
      {"verified_at", utc_now()},
  };
  // What the replay computed on (rank 0's; every rank resolves the same compute): the device,
  // and its numerics (CPU: the pin and the CPU's model; GPU: model, versions and precision).
  c["replay_compute"] = compute_ ? device_facts(*compute_) : json(nullptr);
  c["checkpoints"] = checkpoints_statement();
  // How the dataset's records name documents, as every record was checked to: a query or a
  // proof's checker hashes a document this way (its manifest's label is not in the layout
  // digest unless it is gpt2), and how many tokens (of either split) no text query can find.
  if (!out_.dataset_tokenizer.empty())
    c["dataset"] = {{"tokenizer", out_.dataset_tokenizer},
                    {"tokens_in_no_document", out_.tokens_in_no_document}};
  c.update(run_identity(*log_, *lr_.signed_heads, states_.at(lr_.valid_steps)));
  if (o_.tolerance)
    c["tolerance"] = {{"relative", *o_.tolerance},
                      {"observed",
                       {{"loss", out_.distances.loss},
                        {"grad_norm", out_.distances.grad_norm},
                        {"probe_logprob", out_.distances.probe_logprob},
                        {"eval", out_.distances.eval},
                        {"weights", out_.distances.weights},
                        {"moments", out_.distances.moments}}}};
  return c;
}

}  // namespace wit::witness::detail
