#include "query/query.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/merkle.h"
#include "trainer/data/corpus.h"
#include "trainer/data/split.h"
#include "record/run_config.h"

namespace wit::witness {

using nlohmann::json;

constexpr const char* kProofFormat = "wit-query-proof-v2";
// Epochs a proof checker walks at most (each costs a permutation inverse per sample of the
// document): far beyond any real run, well short of a hang.
constexpr uint64_t kMaxCheckedEpochs = 1'000'000;
// Samples × epochs one answer walks at most (each a permutation inverse, about 34 ns, and up to
// one occurrence, 56 bytes): a few seconds and a few GB. The largest document wit prepare makes
// spans 2.1M samples, 6.3M over 3 epochs.
constexpr uint64_t kMaxWalkedSampleEpochs = 100'000'000;

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

RunFacts RunFacts::from_signed_head(RunMeta meta, const Heads& head, const Signature& signature) {
  RunFacts f;
  const RunConfig rc = run_config_from(parse_committed(meta.committed_yaml, "the run's committed config"));
  f.meta = std::move(meta);
  f.head = head;
  f.head.genesis = f.meta.genesis();
  f.signature = signature;
  f.data_seed = rc.data.seed;
  f.seq_len = uint64_t(rc.data.seq_len);
  f.micro_batches = uint64_t(rc.train.micro_batches);
  f.micro_batch_size = uint64_t(rc.train.micro_batch_size);
  f.steps = head.steps;
  f.total_steps = uint64_t(rc.train.steps);
  return f;
}

RunFacts RunFacts::from_log(const WitnessLog& log, const LogReport& report) {
  if (!report.ok() || !report.signed_heads || log.tables.signatures.empty())
    fail("{} does not verify: no answer is given from a log whose chain is broken",
         log.path.string());
  // The last valid signature: check_log found every signature valid.
  const SignatureRow& last = log.tables.signatures.back();
  return from_signed_head(log.meta, *report.signed_heads, last.signature);
}

Digest document_sha256(std::string_view raw) { return sha256(data::canonicalize(raw)); }

namespace {

// What a verdict follows from: the schedule's facts and where the run ended.
struct ScheduleFacts {
  uint64_t seed = 0, T = 0, M = 0, b = 0, samples = 0, end = 0;
  uint64_t epochs() const { return samples == 0 ? 0 : std::max<uint64_t>(1, (end + samples - 1) / samples); }
};

uint64_t samples_of(uint64_t train_tokens, uint64_t T) {
  return train_tokens > T ? (train_tokens - 1) / T : 0;
}

// The trained windows that may hold a copy's content tokens [a+1, a+length): window s holds
// tokens [s·T, s·T + T]; none for a held-out copy. Empty when first > last.
struct SampleRange {
  uint64_t first = 1, last = 0;
};
SampleRange samples_holding(const data::DocumentRecord& r, const ScheduleFacts& f) {
  if (r.split != data::kSplitTrain || r.length < 2 || f.samples == 0) return {};
  const uint64_t a = r.stream_offset;
  return {a / f.T, std::min((a + r.length - 1) / f.T, f.samples - 1)};
}

using Copies = std::vector<std::pair<uint64_t, data::DocumentRecord>>;

// Samples × epochs that deciding on these copies walks, saturating at 2^64 - 1.
uint64_t sample_epochs(const Copies& copies, const ScheduleFacts& f) {
  unsigned __int128 n = 0;
  for (auto& [id, r] : copies) {
    const SampleRange s = samples_holding(r, f);
    if (s.first <= s.last) n += (unsigned __int128)(s.last - s.first + 1) * f.epochs();
  }
  return n >> 64 ? UINT64_MAX : uint64_t(n);
}

// Every trained window holding one of a copy's content tokens, in every epoch begun before the
// run's end. `epoch(e)` gives epoch e's permutation. Stops after `cap` occurrences in all.
template <typename EpochFn>
void add_occurrences(uint64_t id, const data::DocumentRecord& r, const ScheduleFacts& f,
                     EpochFn epoch, size_t cap, std::vector<Occurrence>& out) {
  const SampleRange range = samples_holding(r, f);
  const uint64_t per_step = f.M * f.b;
  for (uint64_t s = range.first; s <= range.last; ++s)
    for (uint64_t e = 0; e < f.epochs(); ++e) {
      const uint64_t p = e * f.samples + epoch(e).position_of(s);
      if (p >= f.end) continue;
      if (out.size() >= cap) return;
      out.push_back({id, s, p, e, p / per_step, (p % per_step) / f.b, p % f.b});
    }
}

// The verdict on a document's copies (records of the same content hash). Callers first bound the
// walk (sample_epochs). With more than `cap` occurrences, `occurrences` stops at cap + 1 (the
// verdict, included, still holds): a proof checker's cap is the count the proof lists.
Verdict decide(const Copies& copies, std::vector<Occurrence>& occurrences, const ScheduleFacts& f,
               const std::function<const data::Permutation&(uint64_t)>& epoch,
               size_t cap = SIZE_MAX - 1) {
  if (copies.empty()) return Verdict::NotInDataset;
  bool any_train = false;
  for (auto& [id, r] : copies) {
    any_train |= r.split == data::kSplitTrain;
    add_occurrences(id, r, f, epoch, cap + 1, occurrences);
    if (occurrences.size() > cap) return Verdict::Included;
  }
  if (!any_train) return Verdict::HeldOut;
  std::sort(occurrences.begin(), occurrences.end(), [](const Occurrence& x, const Occurrence& y) {
    return std::tie(x.position, x.document_id) < std::tie(y.position, y.document_id);
  });
  return occurrences.empty() ? Verdict::NotReached : Verdict::Included;
}

json occurrence_json(const Occurrence& o) {
  return {{"copy", o.document_id}, {"sample", o.sample}, {"position", o.position},
          {"epoch", o.epoch},      {"step", o.step},     {"micro", o.micro},
          {"row", o.row}};
}

json hex_list(const std::vector<Digest>& ds) {
  json out = json::array();
  for (auto& d : ds) out.push_back(to_hex(d));
  return out;
}

}  // namespace

DataIndex::DataIndex(data::Manifest manifest, RunFacts run, std::string where)
    : manifest_(std::move(manifest)), run_(std::move(run)), where_(std::move(where)) {
  const auto& m = manifest_;
  if (m.root != run_.meta.manifest_root)
    fail(
        "dataset {} has manifest root {}, but the run trained on {}: give the run's dataset "
        "(--data)",
        where_, to_hex(m.root), to_hex(run_.meta.manifest_root));
  if (data::layout_digest(m) != run_.meta.data_layout)
    fail(
        "dataset {} holds the run's documents (root {}) but splits or shards them differently "
        "from the dataset the run trained on: give the run's dataset (--data)",
        where_, to_hex(m.root).substr(0, 16));
  if (run_.seq_len == 0 || run_.micro_batches == 0 || run_.micro_batch_size == 0)
    fail("the run's batch layout is empty (seq_len {}, micro_batches {}, micro_batch_size {})",
         run_.seq_len, run_.micro_batches, run_.micro_batch_size);
  // The limits a proof's checker applies: answers it could not check are not given.
  if ((unsigned __int128)run_.steps * run_.micro_batches * run_.micro_batch_size >> 62)
    fail("the run's schedule is too long to answer for (its positions overflow)");
  tree_ = data::document_tree(m);
  num_samples_ = samples_of(tree_.split_tokens[data::kSplitTrain], run_.seq_len);
  if (num_samples_ > 0) {
    const uint64_t end = run_.end_position();
    const uint64_t epochs = end / num_samples_ + (end % num_samples_ != 0);
    if (epochs > kMaxCheckedEpochs)
      fail("the run spans {} epochs of its {} samples; wit query answers (and a proof is checked) "
           "over at most {}",
           epochs, num_samples_, kMaxCheckedEpochs);
    for (uint64_t e = 0; e < std::max<uint64_t>(epochs, 1); ++e)
      epochs_.emplace_back(num_samples_, run_.data_seed, e);
  }
}

Answer DataIndex::query(const Digest& sha, std::string label) const {
  Answer a;
  a.label = std::move(label);
  a.sha256 = sha;
  const auto& recs = tree_.records;
  auto lo = std::lower_bound(recs.begin(), recs.end(), sha,
                             [](const data::DocumentRecord& r, const Digest& h) { return r.sha256 < h; });
  auto hi = lo;
  while (hi != recs.end() && hi->sha256 == sha) ++hi;
  a.first_leaf = size_t(lo - recs.begin());
  a.last_leaf = size_t(hi - recs.begin());
  Copies copies;
  for (size_t i = a.first_leaf; i < a.last_leaf; ++i) {
    copies.emplace_back(tree_.ids[i], recs[i]);
    a.document_ids.push_back(tree_.ids[i]);
  }
  std::sort(a.document_ids.begin(), a.document_ids.end());
  if (copies.empty()) {
    // wit prepare skips empty documents; an llm.c dataset may hold one (two end-of-text
    // tokens in a row), and then it is a document like any other.
    const bool text = manifest_.tokenizer != "external";
    a.verdict = text && sha == document_sha256("") ? Verdict::Empty : Verdict::NotInDataset;
    return a;
  }
  const ScheduleFacts f{run_.data_seed, run_.seq_len,  run_.micro_batches,
                        run_.micro_batch_size, num_samples_, run_.end_position()};
  if (const uint64_t n = sample_epochs(copies, f); n > kMaxWalkedSampleEpochs)
    fail("{}: its copies span {} samples × epochs of the schedule; wit query answers (and a "
         "proof is checked) over at most {}",
         a.label, n, kMaxWalkedSampleEpochs);
  a.verdict = decide(copies, a.occurrences, f,
                     [this](uint64_t e) -> const data::Permutation& { return epochs_[e]; });
  a.split = a.verdict == Verdict::HeldOut ? data::split_name(data::kSplitVal)
                                          : data::split_name(data::kSplitTrain);
  return a;
}

Digest llmc_document_sha256(std::string_view raw, const data::Gpt2Tokenizer& gpt2) {
  std::vector<uint16_t> tokens = {data::kGpt2Eot};
  const std::vector<uint16_t> body = gpt2.encode(raw);
  tokens.insert(tokens.end(), body.begin(), body.end());
  return sha256(tokens.data(), tokens.size() * sizeof(uint16_t));  // little-endian, as shards
}

Digest DataIndex::document_hash(std::string_view raw) const {
  if (manifest_.tokenizer != "external") return document_sha256(raw);
  if (!gpt2_) gpt2_ = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir({}));
  return llmc_document_sha256(raw, *gpt2_);
}

Answer DataIndex::query_bytes(std::string_view raw, std::string label) const {
  return query(document_hash(raw), std::move(label));
}

Answer DataIndex::query_id(uint64_t id) const {
  const auto& docs = manifest_.documents;
  if (id >= docs.size())
    fail("document id {} is out of range: the dataset {} has ids 0 to {}", id, where_,
         docs.size() - 1);
  return query(docs[id].sha256, fmt::format("id {}", id));
}

const MerkleTree& DataIndex::merkle() const {
  if (!merkle_) merkle_ = std::make_unique<MerkleTree>(tree_.leaves);
  return *merkle_;
}

json DataIndex::proof(const Answer& a) const {
  WIT_CHECK(a.verdict != Verdict::Empty, "no proof for an empty document");
  const RunMeta& m = run_.meta;
  const Heads& h = run_.head;
  json p;
  p["format"] = kProofFormat;
  p["verdict"] = verdict_name(a.verdict);
  p["document_sha256"] = to_hex(a.sha256);
  p["run"] = {{"committed_yaml", m.committed_yaml},
              {"manifest_root", to_hex(m.manifest_root)},
              {"data_layout", to_hex(m.data_layout)},
              {"num_params", m.num_params},
              {"public_key", to_hex(m.public_key.data(), m.public_key.size())}};
  p["signed_head"] = {{"steps", h.steps},
                      {"fingerprints", h.fingerprints},
                      {"checkpoints", h.checkpoints},
                      {"evals", h.evals},
                      {"step_head", to_hex(h.step_head)},
                      {"fingerprint_head", to_hex(h.fingerprint_head)},
                      {"checkpoint_head", to_hex(h.checkpoint_head)},
                      {"eval_head", to_hex(h.eval_head)},
                      {"signature", to_hex(run_.signature.data(), run_.signature.size())}};
  p["dataset"] = {{"tree_root", to_hex(merkle().root())},
                  {"documents", tree_.records.size()},
                  {"train_tokens", tree_.split_tokens[data::kSplitTrain]},
                  {"val_tokens", tree_.split_tokens[data::kSplitVal]}};
  // The copies and one neighbour on each side: together they show the copies are all of them
  // (or, with none, that the hash falls between two adjacent leaves).
  const size_t n = tree_.records.size();
  const size_t from = a.first_leaf > 0 ? a.first_leaf - 1 : 0;
  const size_t to = std::min(a.last_leaf + 1, n);
  json leaves = json::array();
  for (size_t i = from; i < to; ++i) {
    const auto& r = tree_.records[i];
    leaves.push_back({{"index", i},
                      {"sha256", to_hex(r.sha256)},
                      {"split", r.split},
                      {"stream_offset", r.stream_offset},
                      {"length", r.length},
                      {"path", hex_list(merkle().inclusion_proof(i))}});
  }
  p["leaves"] = leaves;
  // Occurrences name their copy by leaf index, which the tree binds (document ids it does not).
  std::vector<Occurrence> by_leaf = a.occurrences;
  for (auto& o : by_leaf)
    for (size_t i = a.first_leaf; i < a.last_leaf; ++i)
      if (tree_.ids[i] == o.document_id) {
        o.document_id = i;
        break;
      }
  std::sort(by_leaf.begin(), by_leaf.end(), [](const Occurrence& x, const Occurrence& y) {
    return std::tie(x.position, x.document_id) < std::tie(y.position, y.document_id);
  });
  json occ = json::array();
  for (auto& o : by_leaf) occ.push_back(occurrence_json(o));
  p["occurrences"] = occ;
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

std::string text(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_string()) invalid(fmt::format("field '{}' is not a string", name));
  return v.get<std::string>();
}

template <size_t N>
std::array<uint8_t, N> hex_bytes(const json& j, const char* name) {
  const std::string s = text(j, name);
  if (s.size() != 2 * N || s.find_first_not_of("0123456789abcdef") != std::string::npos)
    invalid(fmt::format("field '{}' is not {} bytes of lowercase hex", name, N));
  std::array<uint8_t, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = uint8_t(std::stoul(s.substr(2 * i, 2), nullptr, 16));
  return out;
}

Digest digest(const json& j, const char* name) { return hex_bytes<32>(j, name); }

std::vector<Digest> path_of(const json& j) {
  const json& v = field(j, "path");
  if (!v.is_array() || v.size() > 64) invalid("field 'path' is not a list of at most 64 hashes");
  std::vector<Digest> out;
  for (auto& x : v) {
    if (!x.is_string()) invalid("field 'path' holds a non-string");
    out.push_back(digest(json{{"path", x}}, "path"));
  }
  return out;
}

ProofCheck check(const json& p, const TrustedRun& trusted, uint64_t* walk_budget) {
  if (!p.is_object() || text(p, "format") != kProofFormat)
    invalid(fmt::format("not a {} proof", kProofFormat));
  const Digest sha = digest(p, "document_sha256");

  // The run: its genesis preimage must give the trusted genesis.
  const json& run = field(p, "run");
  RunMeta meta;
  meta.committed_yaml = text(run, "committed_yaml");
  meta.manifest_root = digest(run, "manifest_root");
  meta.data_layout = digest(run, "data_layout");
  meta.num_params = number(run, "num_params");
  meta.public_key = hex_bytes<32>(run, "public_key");
  if (meta.genesis() != trusted.genesis)
    invalid(fmt::format("the proof is for run genesis {}, not the trusted {}",
                        to_hex(meta.genesis()).substr(0, 16), to_hex(trusted.genesis).substr(0, 16)));
  if (meta.manifest_root != trusted.manifest_root)
    invalid(fmt::format("the proof's run trained on manifest root {}, not the trusted {}",
                        to_hex(meta.manifest_root).substr(0, 16),
                        to_hex(trusted.manifest_root).substr(0, 16)));

  // The head the trainer signed, which fixes how far the run got.
  const json& sh = field(p, "signed_head");
  Heads head;
  head.genesis = trusted.genesis;
  head.steps = number(sh, "steps");
  head.fingerprints = number(sh, "fingerprints");
  head.checkpoints = number(sh, "checkpoints");
  head.evals = number(sh, "evals");
  head.step_head = digest(sh, "step_head");
  head.fingerprint_head = digest(sh, "fingerprint_head");
  head.checkpoint_head = digest(sh, "checkpoint_head");
  head.eval_head = digest(sh, "eval_head");
  const Signature signature = hex_bytes<64>(sh, "signature");
  const Digest head_digest = head_hash(head);
  if (!verify_signature(meta.public_key, signed_message(head_digest), signature))
    invalid("the signed head is not signed by the run's key");
  if (trusted.signed_head && *trusted.signed_head != head_digest)
    invalid(fmt::format("the proof is for signed head {}, not {}, the run's head as trusted (a "
                        "proof made before the run went on, or of another run)",
                        to_hex(head_digest).substr(0, 16), to_hex(*trusted.signed_head).substr(0, 16)));
  RunFacts facts;
  try {
    facts = RunFacts::from_signed_head(meta, head, signature);
  } catch (const Error& e) {
    invalid(std::string("the run's committed config: ") + e.what());
  }
  if (facts.steps > facts.total_steps) invalid("the signed head covers more steps than the run has");
  // Positions are u64 and each epoch costs a permutation inverse per sample: refuse a schedule
  // whose end overflows or that spans more epochs than a checker should walk.
  const unsigned __int128 end = (unsigned __int128)facts.steps * facts.micro_batches *
                                facts.micro_batch_size;
  if (end >> 62) invalid("the run's schedule is too long to check (its positions overflow)");

  // The dataset: the tree and stream lengths must give the trusted root.
  const json& ds = field(p, "dataset");
  const Digest tree_root = digest(ds, "tree_root");
  const uint64_t n = number(ds, "documents");
  const uint64_t train_tokens = number(ds, "train_tokens"), val_tokens = number(ds, "val_tokens");
  if (data::manifest_root_from(tree_root, n, train_tokens, val_tokens) != trusted.manifest_root)
    invalid("the dataset facts (tree root, documents, stream lengths) do not give the manifest root");

  // The leaves: contiguous, each in the tree; the copies flanked by leaves of other hashes.
  const json& ls = field(p, "leaves");
  if (!ls.is_array() || ls.size() > 1'000'000) invalid("field 'leaves' is not a list");
  Copies copies;
  size_t below = 0, above = 0;
  uint64_t first_index = 0, last_index = 0;
  for (size_t i = 0; i < ls.size(); ++i) {
    const json& l = ls[i];
    const uint64_t index = number(l, "index");
    data::DocumentRecord r;
    r.sha256 = digest(l, "sha256");
    const uint64_t split = number(l, "split");
    if (split > 1) invalid("a leaf's split is not 0 or 1");
    r.split = uint8_t(split);
    r.stream_offset = number(l, "stream_offset");
    r.length = number(l, "length");
    if (i == 0) first_index = index;
    if (index != first_index + i) invalid("the leaves are not adjacent");
    last_index = index;
    if (!merkle_verify_inclusion(data::record_digest(r), index, n, path_of(l), tree_root))
      invalid(fmt::format("leaf {} is not in the tree", index));
    const uint64_t limit = r.split ? val_tokens : train_tokens;
    if (r.length > limit || r.stream_offset > limit - r.length)
      invalid(fmt::format("leaf {} lies outside its stream", index));
    if (r.sha256 < sha) {
      if (i != 0) invalid("the leaves are not in hash order");
      ++below;
    } else if (sha < r.sha256) {
      if (i + 1 != ls.size()) invalid("the leaves are not in hash order");
      ++above;
    } else {
      if (above) invalid("the leaves are not in hash order");
      copies.emplace_back(index, r);
    }
  }
  // Only at an end of the tree may a side lack a leaf of another hash.
  if (ls.empty() ? n != 0
                 : (below == 0 && first_index != 0) || (above == 0 && last_index + 1 != n))
    invalid("the leaves do not reach a leaf of another hash (or an end of the tree) on each side");

  // The verdict, recomputed from what is bound: the records and the committed schedule.
  ScheduleFacts f{facts.data_seed, facts.seq_len, facts.micro_batches, facts.micro_batch_size,
                  samples_of(train_tokens, facts.seq_len), facts.end_position()};
  if (f.epochs() > kMaxCheckedEpochs)
    invalid(fmt::format("the run spans {} epochs of its data; a proof is checked over at most {}",
                        f.epochs(), kMaxCheckedEpochs));
  const uint64_t walk = sample_epochs(copies, f);
  if (walk > kMaxWalkedSampleEpochs)
    invalid(fmt::format("the document's copies span {} samples × epochs of the schedule; a proof "
                        "is checked over at most {}",
                        walk, kMaxWalkedSampleEpochs));
  if (walk_budget) {
    if (walk > *walk_budget)
      invalid(fmt::format("the proofs before it took the checker's budget for one file ({} "
                          "samples × epochs of the schedule walked in all); check it apart",
                          kProofFileWalkBudget));
    *walk_budget -= walk;
  }
  const json& got = field(p, "occurrences");
  if (!got.is_array()) invalid("field 'occurrences' is not a list");
  std::map<uint64_t, data::Permutation> epochs;
  std::vector<Occurrence> occurrences;
  // Capped at the count the proof lists: more would be refused below, and are never held.
  const Verdict v = decide(
      copies, occurrences, f,
      [&](uint64_t e) -> const data::Permutation& {
        auto it = epochs.find(e);
        if (it == epochs.end())
          it = epochs.emplace(e, data::Permutation(f.samples, f.seed, e)).first;
        return it->second;
      },
      got.size());
  if (text(p, "verdict") != verdict_name(v))
    invalid(fmt::format("the proof claims '{}' but its facts give '{}'", text(p, "verdict"),
                        verdict_name(v)));
  json want = json::array();
  for (auto& o : occurrences) want.push_back(occurrence_json(o));
  if (got.size() != want.size())
    invalid("the occurrences are not exactly those the schedule gives");
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      invalid(fmt::format("occurrence {} is not the one the schedule gives", i));
  ProofCheck c;
  c.ok = true;
  c.verdict = verdict_name(v);
  c.steps = facts.steps;
  c.complete = facts.steps == facts.total_steps;
  const std::string when = fmt::format("{} of the run's {} steps, signed by its key{}", facts.steps,
                                       facts.total_steps, c.complete ? " (complete)" : "");
  switch (v) {
    case Verdict::Included:
      c.reason = fmt::format("in the dataset, and the schedule puts its tokens in {} trained "
                             "sample(s) within {}",
                             occurrences.size(), when);
      break;
    case Verdict::HeldOut:
      c.reason = "in the dataset's held-out split: never in the training stream";
      break;
    case Verdict::NotReached:
      c.reason = "in the training split, but none of its samples came within " + when;
      break;
    default:
      c.reason = "not in the dataset: its hash falls between adjacent leaves of the tree";
  }
  return c;
}

}  // namespace

ProofCheck check_proof(const json& proof, const TrustedRun& trusted, uint64_t* walk_budget) {
  try {
    return check(proof, trusted, walk_budget);
  } catch (const Invalid& e) {
    return {false, "", e.reason, 0, false};
  } catch (const std::exception& e) {
    return {false, "", std::string("malformed proof: ") + e.what(), 0, false};
  }
}

}  // namespace wit::witness
