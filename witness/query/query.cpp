#include "witness/query/query.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/merkle.h"
#include "trainer/data/corpus.h"
#include "trainer/data/split.h"

namespace wit::witness {

using nlohmann::json;

constexpr const char* kProofFormat = "wit-query-proof-v1";

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Included:
      return "included";
    case Verdict::HeldOut:
      return "held-out";
    case Verdict::NotReached:
      return "not-reached";
    case Verdict::NotInDataset:
      return "not-in-dataset";
    case Verdict::Empty:
      return "empty";
  }
  return "?";
}

RunFacts RunFacts::from_log(const WitnessLog& log, const LogReport& report) {
  RunFacts f;
  f.manifest_root = log.meta.manifest_root;
  f.data_layout = log.meta.data_layout;
  if (!report.config) fail("{}: the log's committed config does not verify", log.path.string());
  const RunConfig& rc = *report.config;
  f.data_seed = rc.data.seed;
  f.seq_len = uint64_t(rc.data.seq_len);
  f.micro_batches = uint64_t(rc.train.micro_batches);
  f.micro_batch_size = uint64_t(rc.train.micro_batch_size);
  f.steps = report.valid_steps;
  for (uint64_t i = 0; i < f.steps; ++i) f.record_hashes.push_back(log.tables.steps[i].hash);
  return f;
}

Digest document_sha256(std::string_view raw) { return sha256(data::canonicalize(raw)); }

DataIndex::DataIndex(data::Manifest manifest, RunFacts run, std::string where)
    : manifest_(std::move(manifest)), run_(std::move(run)), where_(std::move(where)) {
  const auto& m = manifest_;
  if (m.root != run_.manifest_root)
    fail(
        "dataset {} has manifest root {}, but the run trained on {}: give the run's dataset "
        "(--data)",
        where_, to_hex(m.root), to_hex(run_.manifest_root));
  if (data::layout_digest(m) != run_.data_layout)
    fail(
        "dataset {} holds the run's documents (root {}) but splits or shards them differently "
        "from the dataset the run trained on: give the run's dataset (--data)",
        where_, to_hex(m.root).substr(0, 16));
  if (run_.seq_len == 0 || run_.micro_batches == 0 || run_.micro_batch_size == 0)
    fail("the run's batch layout is empty (seq_len {}, micro_batches {}, micro_batch_size {})",
         run_.seq_len, run_.micro_batches, run_.micro_batch_size);
  // Each split's stream is its shards concatenated in manifest order.
  uint64_t split_tokens[2] = {0, 0};
  for (auto& sh : m.shards) {
    shard_offset_.push_back(split_tokens[sh.split ? 1 : 0]);
    split_tokens[sh.split ? 1 : 0] += sh.tokens;
  }
  const uint64_t tokens = split_tokens[data::kSplitTrain];
  num_samples_ = tokens > run_.seq_len ? (tokens - 1) / run_.seq_len : 0;
  for (auto& d : m.documents) sorted_.emplace_back(d.sha256, d.id);
  std::sort(sorted_.begin(), sorted_.end());
  for (auto& [h, id] : sorted_) sorted_hashes_.push_back(h);
  if (num_samples_ > 0) {
    const uint64_t end = run_.end_position();
    const uint64_t epochs = end / num_samples_ + (end % num_samples_ != 0);
    for (uint64_t e = 0; e < std::max<uint64_t>(epochs, 1); ++e)
      epochs_.emplace_back(num_samples_, run_.data_seed, e);
  }
}

uint64_t DataIndex::stream_offset(const data::DocumentEntry& d) const {
  if (d.shard >= shard_offset_.size())
    fail("dataset {}: document {} names shard {}, but there are {}", where_, d.id, d.shard,
         shard_offset_.size());
  return shard_offset_[d.shard] + d.offset;
}

std::pair<uint64_t, uint64_t> DataIndex::sample_range(const data::DocumentEntry& d) const {
  // Content tokens [a + 1, a + length): the leading end-of-text token belongs to no document.
  // Window s holds tokens [s·T, s·T + T].
  const uint64_t T = run_.seq_len, a = stream_offset(d);
  if (d.length < 2 || num_samples_ == 0) return {1, 0};
  const uint64_t first = a / T, last = std::min((a + d.length - 1) / T, num_samples_ - 1);
  return {first, last};
}

uint64_t DataIndex::position_in_epoch(uint64_t sample, uint64_t epoch) const {
  return epoch * num_samples_ + epochs_[epoch].position_of(sample);
}

Answer DataIndex::query(const Digest& sha, std::string label) const {
  Answer a;
  a.label = std::move(label);
  a.sha256 = sha;
  auto lo = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(sha, uint64_t(0)));
  for (auto it = lo; it != sorted_.end() && it->first == sha; ++it)
    a.document_ids.push_back(it->second);
  if (a.document_ids.empty()) {
    a.verdict = sha == document_sha256("") ? Verdict::Empty : Verdict::NotInDataset;
    return a;
  }
  const auto& docs = manifest_.documents;
  const uint8_t split = docs[a.document_ids.front()].split;
  a.split = data::split_name(split);
  if (split != data::kSplitTrain) {
    a.verdict = Verdict::HeldOut;
    return a;
  }
  const uint64_t end = run_.end_position(), per_step = run_.micro_batches * run_.micro_batch_size;
  for (uint64_t id : a.document_ids) {
    const auto [first, last] = sample_range(docs[id]);
    for (uint64_t s = first; s <= last && first <= last; ++s)
      for (uint64_t e = 0; e < epochs_.size(); ++e) {
        const uint64_t p = position_in_epoch(s, e);
        if (p >= end) continue;
        a.occurrences.push_back({id, s, p, e, p / per_step, (p % per_step) / run_.micro_batch_size,
                                 p % run_.micro_batch_size});
      }
  }
  std::sort(a.occurrences.begin(), a.occurrences.end(),
            [](const Occurrence& x, const Occurrence& y) { return x.position < y.position; });
  a.verdict = a.occurrences.empty() ? Verdict::NotReached : Verdict::Included;
  return a;
}

Answer DataIndex::query_bytes(std::string_view raw, std::string label) const {
  return query(document_sha256(raw), std::move(label));
}

Answer DataIndex::query_id(uint64_t id) const {
  const auto& docs = manifest_.documents;
  if (id >= docs.size())
    fail("document id {} is out of range: the dataset {} has ids 0 to {}", id, where_,
         docs.size() - 1);
  return query(docs[id].sha256, fmt::format("id {}", id));
}

namespace {

json hex_list(const std::vector<Digest>& ds) {
  json out = json::array();
  for (auto& d : ds) out.push_back(to_hex(d));
  return out;
}

// The digest that seals a proof against corruption: over the proof without this field.
Digest proof_digest(json proof) {
  proof.erase("proof_digest");
  return sha256(std::string("wit-query-proof-digest-v1") + proof.dump());
}

}  // namespace

const MerkleTree& DataIndex::tree() const {
  if (!tree_) tree_ = std::make_unique<MerkleTree>(sorted_hashes_);
  return *tree_;
}

json DataIndex::proof(const Answer& a) const {
  WIT_CHECK(a.verdict != Verdict::Empty, "no proof for an empty document");
  const auto& m = manifest_;
  json p;
  p["format"] = kProofFormat;
  p["verdict"] = verdict_name(a.verdict);
  p["document_sha256"] = to_hex(a.sha256);
  p["manifest_root"] = to_hex(m.root);
  p["tree_size"] = sorted_hashes_.size();
  const size_t n = sorted_hashes_.size();
  const size_t at =
      size_t(std::lower_bound(sorted_hashes_.begin(), sorted_hashes_.end(), a.sha256) -
             sorted_hashes_.begin());
  if (a.verdict == Verdict::NotInDataset) {
    json neighbors = json::array();
    for (size_t i : {at - 1, at})  // at − 1 wraps when at = 0: skipped below
      if (i < n)
        neighbors.push_back({{"leaf_index", i},
                             {"sha256", to_hex(sorted_hashes_[i])},
                             {"path", hex_list(tree().inclusion_proof(i))}});
    p["neighbors"] = neighbors;
  } else {
    p["membership"] = {{"leaf_index", at}, {"path", hex_list(tree().inclusion_proof(at))}};
  }
  if (a.verdict == Verdict::HeldOut) {
    p["split"] = {{"rule", data::kSplitRuleHash},
                  {"seed", m.split_seed},
                  {"val_fraction", m.val_fraction},
                  {"key", data::split_key(m.split_seed, a.sha256)}};
  }
  if (a.verdict == Verdict::Included || a.verdict == Verdict::NotReached) {
    p["schedule"] = {{"protocol", "wit-schedule-v1"},
                     {"data_seed", run_.data_seed},
                     {"num_samples", num_samples_},
                     {"seq_len", run_.seq_len},
                     {"micro_batches", run_.micro_batches},
                     {"micro_batch_size", run_.micro_batch_size},
                     {"steps", run_.steps}};
    json copies = json::array();
    for (uint64_t id : a.document_ids) {
      const auto& d = m.documents[id];
      copies.push_back({{"id", id}, {"stream_offset", stream_offset(d)}, {"length", d.length}});
    }
    p["copies"] = copies;
  }
  if (a.verdict == Verdict::Included) {
    json occ = json::array();
    std::set<uint64_t> steps;
    for (auto& o : a.occurrences) {
      occ.push_back({{"copy", o.document_id},
                     {"sample", o.sample},
                     {"position", o.position},
                     {"step", o.step},
                     {"micro", o.micro},
                     {"row", o.row}});
      steps.insert(o.step);
    }
    p["occurrences"] = occ;
    json records = json::array();
    for (uint64_t s : steps)
      records.push_back({{"step", s}, {"record_hash", to_hex(run_.record_hashes.at(s))}});
    p["records"] = records;
  }
  if (a.verdict == Verdict::NotReached) {
    // Only the first epoch has begun: each sample's one position, all at or past the end.
    json first = json::array();
    for (uint64_t id : a.document_ids) {
      const auto [lo, hi] = sample_range(m.documents[id]);
      for (uint64_t s = lo; s <= hi && lo <= hi; ++s)
        first.push_back({{"copy", id}, {"sample", s}, {"position", position_in_epoch(s, 0)}});
    }
    p["first_positions"] = first;
  }
  p["proof_digest"] = to_hex(proof_digest(p));
  return p;
}

// ---------------------------------------------------------------------------------------------
// Checking a proof alone

namespace {

struct Invalid {
  std::string reason;
};

[[noreturn]] void invalid(std::string reason) { throw Invalid{std::move(reason)}; }

const json& field(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name)) invalid(fmt::format("missing field '{}'", name));
  return j.at(name);
}

uint64_t number(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_number_unsigned())
    invalid(fmt::format("field '{}' is not a non-negative integer", name));
  return v.get<uint64_t>();
}

Digest digest(const json& v, const char* name) {
  if (!v.is_string()) invalid(fmt::format("field '{}' is not a hex string", name));
  try {
    return digest_from_hex(v.get<std::string>(), name);
  } catch (const Error&) {
    invalid(fmt::format("field '{}' is not 64 hex digits", name));
  }
}

std::vector<Digest> digests(const json& v, const char* name) {
  if (!v.is_array()) invalid(fmt::format("field '{}' is not a list", name));
  std::vector<Digest> out;
  for (auto& x : v) out.push_back(digest(x, name));
  return out;
}

void check_schedule_facts(const json& p, const Digest& sha, bool included) {
  const json& s = field(p, "schedule");
  if (field(s, "protocol") != "wit-schedule-v1") invalid("unknown schedule protocol");
  const uint64_t seed = number(s, "data_seed"), n = number(s, "num_samples");
  const uint64_t T = number(s, "seq_len"), M = number(s, "micro_batches");
  const uint64_t b = number(s, "micro_batch_size"), steps = number(s, "steps");
  if (n == 0 || T == 0 || M == 0 || b == 0) invalid("the schedule facts hold a zero");
  const uint64_t end = steps * M * b;
  const data::Schedule schedule(n, seed);
  // Each copy's content tokens, by id.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> content;
  for (auto& c : field(p, "copies")) {
    const uint64_t a = number(c, "stream_offset"), len = number(c, "length");
    if (len < 2) invalid("a copy without content tokens");
    content[number(c, "id")] = {a + 1, a + len};
  }
  if (content.empty()) invalid("no copies of the document");
  auto window_holds = [&](uint64_t copy, uint64_t sample) {
    auto it = content.find(copy);
    if (it == content.end()) invalid(fmt::format("occurrence of unknown copy {}", copy));
    const uint64_t lo = sample * T, hi = sample * T + T;  // inclusive window
    return sample < n && lo < it->second.second && hi >= it->second.first;
  };
  if (included) {
    std::set<uint64_t> steps_seen;
    for (auto& o : field(p, "occurrences")) {
      const uint64_t copy = number(o, "copy"), s = number(o, "sample"), pos = number(o, "position");
      if (pos >= end) invalid(fmt::format("position {} is past the run's last step", pos));
      if (schedule.sample_at(pos) != s)
        invalid(fmt::format("the schedule puts sample {} at position {}, not sample {}",
                            schedule.sample_at(pos), pos, s));
      if (!window_holds(copy, s))
        invalid(fmt::format("sample {} does not hold the document's tokens", s));
      if (number(o, "step") != pos / (M * b) || number(o, "micro") != (pos / b) % M ||
          number(o, "row") != pos % b)
        invalid(fmt::format("step, micro or row do not match position {}", pos));
      steps_seen.insert(pos / (M * b));
    }
    if (steps_seen.empty()) invalid("an inclusion proof without occurrences");
    std::set<uint64_t> steps_recorded;
    for (auto& r : field(p, "records")) {
      digest(field(r, "record_hash"), "record_hash");
      steps_recorded.insert(number(r, "step"));
    }
    if (steps_recorded != steps_seen)
      invalid("the records do not list exactly the steps of the occurrences");
  } else {
    if (end > n)
      invalid("the run went past its first epoch: every sample was scheduled before its end");
    std::map<uint64_t, std::set<uint64_t>> listed;
    for (auto& f : field(p, "first_positions")) {
      const uint64_t copy = number(f, "copy"), s = number(f, "sample"), pos = number(f, "position");
      if (pos >= n || schedule.sample_at(pos) != s)
        invalid(fmt::format("sample {} is not at position {} of the first epoch", s, pos));
      if (pos < end) invalid(fmt::format("sample {} was trained at position {}", s, pos));
      if (!window_holds(copy, s)) invalid(fmt::format("sample {} does not hold the document", s));
      listed[copy].insert(s);
    }
    // Every sample holding the document must be listed.
    for (auto& [copy, range] : content) {
      const uint64_t first = (range.first - 1) / T, last = std::min((range.second - 1) / T, n - 1);
      for (uint64_t s = first; s <= last && first <= last; ++s)
        if (!listed[copy].count(s))
          invalid(fmt::format("sample {} of copy {} is not accounted for", s, copy));
    }
  }
  (void)sha;
}

ProofCheck check(const json& p, const Digest& root) {
  if (field(p, "format") != kProofFormat) invalid("not a wit-query-proof-v1 proof");
  if (digest(field(p, "proof_digest"), "proof_digest") != proof_digest(p))
    invalid("the proof's digest does not match its contents (it was altered or damaged)");
  const Digest proof_root = digest(field(p, "manifest_root"), "manifest_root");
  if (proof_root != root)
    invalid(
        fmt::format("the proof is for manifest root {}, not {}", to_hex(proof_root), to_hex(root)));
  const Digest sha = digest(field(p, "document_sha256"), "document_sha256");
  const uint64_t n = number(p, "tree_size");
  const std::string verdict =
      field(p, "verdict").is_string() ? p["verdict"].get<std::string>() : "";
  if (verdict == "not-in-dataset") {
    const json& nb = field(p, "neighbors");
    if (!nb.is_array() || nb.size() > 2) invalid("'neighbors' must list one or two leaves");
    if (nb.empty() && !(n == 0 && root == merkle_root({}))) invalid("no neighboring leaves");
    std::vector<std::pair<uint64_t, Digest>> leaves;
    for (auto& x : nb) {
      const uint64_t i = number(x, "leaf_index");
      const Digest h = digest(field(x, "sha256"), "sha256");
      if (!merkle_verify_inclusion(h, i, n, digests(field(x, "path"), "path"), root))
        invalid(fmt::format("neighbor leaf {} is not in the tree", i));
      leaves.emplace_back(i, h);
    }
    if (leaves.size() == 2) {
      if (leaves[1].first != leaves[0].first + 1) invalid("the neighbors are not adjacent leaves");
      if (!(leaves[0].second < sha && sha < leaves[1].second))
        invalid("the document's hash does not fall between its neighbors");
    } else if (leaves.size() == 1) {
      const bool before_first = leaves[0].first == 0 && sha < leaves[0].second;
      const bool after_last = leaves[0].first + 1 == n && leaves[0].second < sha;
      if (!before_first && !after_last) invalid("one neighbor, but not at an end of the tree");
    }
    return {true, verdict, "not in the dataset: its hash falls between two adjacent leaves"};
  }
  const json& mem = field(p, "membership");
  if (!merkle_verify_inclusion(sha, number(mem, "leaf_index"), n,
                               digests(field(mem, "path"), "path"), root))
    invalid("the membership path does not lead to the manifest root");
  if (verdict == "held-out") {
    const json& s = field(p, "split");
    if (field(s, "rule") != data::kSplitRuleHash) invalid("unknown split rule");
    const uint64_t seed = number(s, "seed");
    const json& f = field(s, "val_fraction");
    if (!f.is_number() || f.get<double>() < 0 || f.get<double>() >= 1) invalid("bad val_fraction");
    const uint64_t key = data::split_key(seed, sha);
    if (number(s, "key") != key) invalid("the split key does not match the document");
    const uint64_t threshold = uint64_t(std::ceil(std::ldexp(f.get<double>(), 64)));
    if (key >= threshold) invalid("the split rule puts this document in the training split");
    return {true, verdict,
            "in the dataset, held out by the split rule: never in the training stream"};
  }
  if (verdict == "included") {
    check_schedule_facts(p, sha, true);
    return {true, verdict,
            "in the dataset, and the schedule puts its tokens in the listed steps (their record "
            "hashes are checked against the run's log by `wit query RUN`)"};
  }
  if (verdict == "not-reached") {
    check_schedule_facts(p, sha, false);
    return {true, verdict, "in the dataset, but none of its samples came before the run's end"};
  }
  invalid(fmt::format("unknown verdict '{}'", verdict));
}

}  // namespace

ProofCheck check_proof(const json& proof, const Digest& root) {
  try {
    return check(proof, root);
  } catch (const Invalid& e) {
    return {false, "", e.reason};
  } catch (const std::exception& e) {
    return {false, "", std::string("malformed proof: ") + e.what()};
  }
}

}  // namespace wit::witness
