// The stages of `wit verify` that recompute: the challenges (segments replayed with the
// trainer's own step), the final model's export and the final evaluation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/fs.h"
#include "query/query.h"
#include "trainer/checkpoint.h"
#include "trainer/choice_eval.h"
#include "trainer/data/split.h"
#include "trainer/step.h"
#include "trainer/witnessing.h"
#include "verify/compare.h"
#include "verify/verification.h"

namespace wit::witness::detail {

namespace {

std::string challenge_source_text(const VerifyOptions& o, const LogReport& lr) {
  switch (o.source) {
    case ChallengeSource::VerifierRandom:
      return "the verifier's random source (getrandom), drawn after the run was received";
    case ChallengeSource::VerifierSeed:
      return fmt::format("the verifier's seed {}", o.seed);
    case ChallengeSource::FiatShamir:
      return "Fiat-Shamir from the signed head " + to_hex(head_hash(*lr.signed_heads)).substr(0, 16);
  }
  return "?";
}

}  // namespace

// The behavioural fingerprint of the layout's current state against a logged one (collective).
void Verification::check_fingerprint(const FingerprintRow& row) {
  const FingerprintFields got = layout_->fingerprint(plan_->probe_batch());
  const auto& logged = row.fields;
  const uint64_t s = logged.step;
  std::string problem;
  if (root_ && o_.tolerance) {
    double worst = 0;
    for (size_t i = 0; i < got.mean_logprob.size(); ++i)
      worst = worse(worst, double(std::abs(got.mean_logprob[i] - logged.mean_logprob.at(i))));
    out_.distances.probe_logprob = worse(out_.distances.probe_logprob, worst);
    if (!(worst <= *o_.tolerance))
      problem = fmt::format(
          "fingerprint after step {}, field mean_logprob: distance {:.3g} exceeds the "
          "tolerance {:.3g}",
          s, worst, *o_.tolerance);
  } else if (root_ && (got.mean_logprob != logged.mean_logprob ||
                       got.argmax_digest != logged.argmax_digest)) {
    problem = fmt::format(
        "fingerprint after step {}: the model's outputs on the probe batch differ from the "
        "log's",
        s);
  }
  agree_with_root(comm_, problem);
}

// A logged val loss recomputed from the layout's current state (collective); each is recomputed
// once, the final one included.
void Verification::check_eval(const EvalRow& row) {
  const uint64_t step = row.fields.step;
  if (evals_checked_.count(step)) return;
  const float v = layout_->evaluate(dataset_->val(), rc_.data.seq_len, rc_.train.micro_batch_size,
                                    rc_.train.eval_batches);
  std::string problem;
  if (root_)
    problem = value_problem(fmt::format("eval after step {}, field value", step), v,
                            row.fields.value, o_.tolerance, out_.distances.eval);
  agree_with_root(comm_, problem);
  if (choices_) check_choice_eval(step);
  evals_checked_.insert(step);
}

// The multiple-choice rows after `step` rescored from the current state (collective). Exact
// replay compares their bits; a tolerance replay their relative distance, as for the val loss.
void Verification::check_choice_eval(uint64_t step) {
  const ChoiceScore score = score_choices(*layout_, *choices_);
  std::string problem;
  const auto rows = choice_rows_.find(step);
  if (rows == choice_rows_.end() || rows->second.size() != 2) {
    problem = fmt::format("eval after step {}: the log lacks its multiple-choice rows", step);
  } else if (root_) {
    for (const EvalRow* row : rows->second) {
      const bool norm = row->fields.metric == "acc_norm";
      problem = value_problem(fmt::format("eval after step {}, choice {} ({} of {} examples)", step,
                                          row->fields.metric,
                                          norm ? score.correct_norm : score.correct,
                                          score.examples),
                              norm ? score.acc_norm() : score.acc(), row->fields.value,
                              o_.tolerance, out_.distances.eval);
      if (!problem.empty()) break;
    }
  }
  agree_with_root(comm_, problem);
}

// A checkpoint the replay passes: its committed state must be the replayed one (collective).
void Verification::check_checkpoint(uint64_t step) {
  if (!o_.tolerance) {
    // In the formula of the committed file's version (runs from older builds hold version 2).
    const uint32_t version = read_checkpoint_info(checkpoint_file(step)).version;
    const Digest h = layout_->state_hash(log_->genesis, version);  // rank 0 has it
    agree_with_root(
        comm_, root_ && h != states_.at(step)
                   ? fmt::format("checkpoint after step {}: the replayed state hashes to {}, "
                                 "the log committed {}",
                                 step, to_hex(h).substr(0, 16),
                                 to_hex(states_.at(step)).substr(0, 16))
                   : "");
    return;
  }
  // Other hardware: the replayed state against the committed checkpoint's, the AdamW moments
  // too: a later segment's replay starts from the committed ones, so moments nobody compared
  // could carry any jump of the weights the trainer liked into its first step.
  const HostState mine = layout_->full_state();
  std::string problem;
  if (root_) {
    try {
      const std::filesystem::path file = checkpoint_file(step);
      const Checkpoint c = load_checkpoint(file);  // whole, its hash checked
      require_state(c.info, file, &states_.at(step));  // and still the committed one
      const auto distance = [](const torch::Tensor& replayed, const torch::Tensor& committed) {
        return (replayed - committed).norm().item<double>() /
               std::max(committed.norm().item<double>(), 1e-30);
      };
      const double w = distance(mine.params, c.params);
      const double m = worse(distance(mine.m, c.m), distance(mine.v, c.v));
      out_.distances.weights = worse(out_.distances.weights, w);
      out_.distances.moments = worse(out_.distances.moments, m);
      if (!(w <= *o_.tolerance))
        problem = fmt::format(
            "checkpoint after step {}: the replayed weights are at relative L2 distance "
            "{:.3g} from the committed ones, beyond the tolerance {:.3g}",
            step, w, *o_.tolerance);
      else if (!(m <= *o_.tolerance))
        problem = fmt::format(
            "checkpoint after step {}: the replayed AdamW moments are at relative L2 distance "
            "{:.3g} from the committed ones, beyond the tolerance {:.3g} (the next segment "
            "starts from them)",
            step, m, *o_.tolerance);
    } catch (const Mismatch& e) {  // rank 0 alone read the file: the others learn it below
      problem = e.what;
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  agree_with_root(comm_, problem);
}

// The segments to replay, in order. The first and the last segment always: the initialisation
// from the committed seed, and the state the published model is exported from. Then c draws,
// uniform with replacement, over the segments between them, all of exactly K steps: if a
// fraction f of all steps is bad and none is in the first or last segment, at least a fraction f
// of the middle segments is bad, and c draws miss them all with probability at most (1 - f)^c.
// A board's job replays the segments it was assigned instead.
std::vector<uint64_t> Verification::choose_segments() {
  std::set<uint64_t> replay;
  if (o_.segments) {
    for (uint64_t k : *o_.segments) {
      if (k >= segments_.size())
        fail("segment {} was assigned, but the run has {} segments of {} steps", k,
             segments_.size(), K_);
      replay.insert(k);
    }
    out_.challenge_source = "assigned";
    if (const auto p = o_.probe_after_step; p && !replay.empty()) {
      bool inside = false;
      for (uint64_t k : replay) inside |= segments_[k].first < *p && *p < segments_[k].second;
      if (!inside)
        fail("the state after step {} was asked for, which is inside no assigned segment", *p);
    }
    return {replay.begin(), replay.end()};
  }
  const uint64_t middle = segments_.size() > 2 ? segments_.size() - 2 : 0;
  const Digest key = challenge_key(o_, lr_, comm_);
  out_.challenge_source = challenge_source_text(o_, lr_);
  replay = {0, segments_.size() - 1};
  out_.always_replayed = {segments_.front().first, segments_.back().first};
  out_.draws = middle > 0 ? o_.challenges : 0;
  for (uint64_t k : draw_segments(key, out_.draws, segments_.size())) {
    out_.drawn.push_back(segments_[k].first);
    replay.insert(k);
  }
  return {replay.begin(), replay.end()};
}

// The last committed checkpoint at or before step `first`.
uint64_t Verification::start_of(uint64_t first) const {
  const auto after = states_.upper_bound(first);
  return after == states_.begin() ? 0 : std::prev(after)->first;
}

// The plan, priced before anything is replayed: the steps to run (from the checkpoint before
// each segment, or on from the previous segment in exact mode) and what the trainer's own step
// times for them add up to.
void Verification::price_plan(const std::vector<uint64_t>& order) {
  const Tables& t = log_->tables;
  uint64_t planned = 0, at = 0;
  double logged = 0;
  bool loaded = false;
  for (uint64_t k : order) {
    const auto [first, end] = segments_[k];
    const uint64_t from = start_of(first);
    if (!(loaded && !o_.tolerance && at >= from && at <= first)) at = from;
    loaded = true;
    for (uint64_t s = at; s < end; ++s) logged += t.steps[s].timing.seconds;
    planned += end - at;
    at = end;
  }
  progress(fmt::format("  plan: {} steps to replay ({} % of the run's {}) in {} segment(s); the "
                       "trainer's step times for them add up to {}",
                       planned, planned * 100 / std::max<uint64_t>(t.steps.size(), 1),
                       t.steps.size(), order.size(), format_duration(logged)));
  replay_start_ = last_line_ = Clock::now();
  planned_ = planned;
}

// Replays segment k with the trainer's own step, checking every logged field, fingerprint, eval
// and checkpoint it passes. Starts from the last checkpoint at or before the segment, or, in
// exact mode, goes on from where the previous segment's replay stopped when that is on the way
// (it was checked).
void Verification::replay_segment(uint64_t k, bool have_state) {
  const Tables& t = log_->tables;
  const auto [first, end] = segments_[k];
  out_.challenged.push_back(first);
  const uint64_t from = start_of(first);
  const uint64_t at = uint64_t(layout_->steps_done());
  if (!(have_state && !o_.tolerance && at >= from && at <= first)) load_state(from);
  const uint64_t cur = uint64_t(layout_->steps_done());
  progress(cur == first
               ? fmt::format("  replaying steps {} to {}", first, end - 1)
               : fmt::format("  replaying steps {} to {} (from step {})", first, end - 1, cur));
  for (uint64_t s = cur; s < end; ++s) {
    const auto start = Clock::now();
    const StepRecord rec = train_step(*layout_, plan_->context());
    out_.cost.replay_seconds += seconds_since(start);
    out_.cost.logged_seconds += t.steps[s].timing.seconds;
    out_.cost.replayed_steps += 1;
    compare_step(step_fields(rec), t.steps[s].fields, o_.tolerance, out_.distances);
    if (auto p = fingerprints_.find(s + 1); p != fingerprints_.end()) check_fingerprint(*p->second);
    if (auto e = evals_.find(s + 1); e != evals_.end()) check_eval(*e->second);
    if (states_.count(s + 1)) check_checkpoint(s + 1);
    if (o_.probe_after_step == s + 1) {
      const Digest h = layout_->state_hash(log_->genesis);  // collective; rank 0 has it
      if (root_) out_.probe_state = h;
    }
    // A line every 10 s at most, with the ETA from this replay's own pace.
    ++replayed_;
    if (seconds_since(last_line_) >= 10 && replayed_ < planned_) {
      last_line_ = Clock::now();
      const double spent = seconds_since(replay_start_);
      progress(fmt::format("    step {}: {} of {} steps replayed, ETA {}", s + 1, replayed_,
                           planned_,
                           format_duration(spent / double(replayed_) *
                                           double(planned_ - replayed_))));
    }
  }
}

std::string Verification::challenges() {
  const std::vector<uint64_t> order = choose_segments();
  if (o_.segments && order.empty()) return "no segment assigned";
  price_plan(order);
  bool have_state = false;
  for (uint64_t k : order) {
    replay_segment(k, have_state);
    have_state = true;
  }
  const std::string how = o_.tolerance ? fmt::format("within tolerance {:.3g}", *o_.tolerance)
                                       : std::string("bit for bit");
  if (o_.segments)
    return fmt::format("segment(s) {} of {} (steps {} to {}) replayed {} on {} process(es)",
                       fmt::join(order, ", "), segments_.size(), segments_[order.front()].first,
                       segments_[order.back()].second - 1, how, comm_.size());
  const uint64_t middle = segments_.size() > 2 ? segments_.size() - 2 : 0;
  return fmt::format(
      "{} of {} segments ({} steps) replayed {} on {} process(es): the first and the last, "
      "and {} draw(s) from the {} between them ({})",
      order.size(), segments_.size(), out_.cost.replayed_steps, how, comm_.size(), out_.draws,
      middle, out_.challenge_source);
}

// A run that declares a nondeterministic setting and differs on replay only in the step's
// outputs is an honest run that cannot be checked, not a proven lie: the checks that need no
// replay still run, and the verdict is "not reproducible".
void Verification::excuse_declared_nondeterminism() {
  if (o_.tolerance || nondeterminism_.empty() || !failed_ || !out_.stages.back().outputs_differ)
    return;
  failed_ = false;
  excused_ = true;
  out_.reason = fmt::format("{}; replay differs at {}", nondeterminism_, out_.stages.back().detail);
}

// model.safetensors is the export of the last checkpoint, which the log's last fingerprints
// describe.
std::string Verification::final_model() {
  const fs::path published = o_.run / "model.safetensors";
  if (!fs::exists(published)) mismatch(published.string() + " is missing");
  const uint64_t last = lr_.valid_steps;
  if (!states_.count(last)) mismatch(fmt::format("no checkpoint after the last step {}", last));
  load_state(last);
  // A directory of its own, removed on every way out: the export writes config.json beside the
  // model, which verifications running side by side must not share.
  struct Scratch {
    fs::path dir;
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } scratch{fs::temp_directory_path() / fmt::format("wit-verify-{}-{}", ::getpid(), last)};
  fs::create_directories(scratch.dir);
  const fs::path mine = scratch.dir / "model.safetensors";
  layout_->export_model(mine, {{"format", "pt"},
                               {"wit.step", std::to_string(last)},
                               {"wit.manifest_root", to_hex(log_->meta.manifest_root)}});
  std::string problem;
  if (root_) {
    // The sizes first: the trainer's file is read only when it can be the export (a link to a
    // device, or a file of any size, is never read whole).
    std::error_code ec;
    const bool can_be = fs::is_regular_file(published, ec) &&
                        fs::file_size(published, ec) == fs::file_size(mine) && !ec;
    bool same = false;
    try {
      if (can_be) {
        const std::string bytes = read_text_file(published);
        out_.model_sha256 = sha256(bytes);
        same = read_text_file(mine) == bytes;
      }
    } catch (const Error& e) {
      problem = e.what();  // rank 0 alone reads: the others learn it below, not hang
    }
    if (!same && problem.empty())
      problem = fmt::format("{} is not the export of the checkpoint after step {}",
                            published.string(), last);
  }
  agree_with_root(comm_, problem, false);
  const Fingerprint w = layout_->weight_fingerprint();  // exact bits: any hardware agrees
  if (last > 0 && w != log_->tables.steps[last - 1].fields.weight_fingerprint)
    mismatch(fmt::format("the last checkpoint's weight fingerprint {} is not the one logged "
                         "after step {}",
                         to_hex(w.data(), w.size()), last - 1));
  if (auto p = fingerprints_.find(last); p != fingerprints_.end()) check_fingerprint(*p->second);
  return fmt::format(
      "model.safetensors is exactly the last checkpoint (after step {}), whose weight and "
      "behavioural fingerprints are the logged ones",
      last);
}

// The final val loss recomputed, and every held-out document excluded from training.
std::string Verification::evaluation() {
  const uint64_t last = lr_.valid_steps;
  const auto final_eval = evals_.find(last);
  if (final_eval == evals_.end()) mismatch("the log has no final val loss");
  check_eval(*final_eval->second);
  const DataIndex index(dataset_->manifest(), RunFacts::from_log(*log_, lr_), data_dir_.string());
  size_t held_out = 0;
  for (auto& d : dataset_->manifest().documents) {
    if (d.split != data::kSplitVal) continue;
    const Answer a = index.query_id(d.id);
    if (a.verdict != Verdict::HeldOut)
      mismatch(fmt::format("held-out document {} is {}", d.id, verdict_name(a.verdict)));
    ++held_out;
  }
  std::string choice;
  if (choices_) {
    const auto& rows = choice_rows_.at(last);
    choice = fmt::format(" and multiple-choice acc {} acc_norm {} over {} examples (file SHA-256 "
                         "{})",
                         rows[0]->fields.value, rows[1]->fields.value, choices_->examples.size(),
                         rc_.train.choice_eval_sha256.substr(0, 16));
  }
  return fmt::format("final val loss {}{} recomputed {}; {} held-out documents excluded",
                     final_eval->second->fields.value, choice,
                     o_.tolerance ? "within tolerance" : "exactly", held_out);
}

}  // namespace wit::witness::detail
