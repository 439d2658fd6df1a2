// How fast `wit query` answers over a run of a large run's size: a train stream of 10^9 samples
// (T = 1024) trained for 3 epochs at 512 samples a step (5.86M steps), 10^6 documents of 200 to
// 4,000 tokens, one of 10^6 tokens (978 samples), 10^4 held-out documents. The manifest is
// built in memory with random document hashes; DataIndex reads only the manifest, never a shard,
// so nothing else is needed. One filler document stretches the train stream from the ~2·10^9
// tokens of the real-sized documents to 10^9 samples; it is never queried (its ~10^9 samples
// would give 3·10^9 occurrences). The one train shard is larger than a real shard may be
// (kShardMaxTokens), which the index does not look at: it only sums shard token counts.
//
// Timed: the per-run setup (the Merkle root that read_manifest recomputes, DataIndex
// construction), the first query after construction, single queries by kind (median, p99, max),
// 10^4 mixed queries (90 % in the dataset, 10 % not) in a loop on one thread, and proofs:
// index.proof() and check_proof() per query, their size, and the Merkle path inside proof().
//
//   build/benchmarks/wit_bench_query [--samples 1000000000] [--docs 1000000] [--val-docs 10000]
//                                    [--queries 10000] [--latency 1000] [--proofs 20]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/bench_timing.h"
#include "core/merkle.h"
#include "trainer/data/manifest.h"
#include "trainer/data/split.h"
#include "record/run_config.h"
#include "query/query.h"

namespace {

using Clock = std::chrono::steady_clock;
using wit::Digest;
using wit::witness::Answer;
using wit::witness::DataIndex;
using wit::witness::Verdict;

using wit::bench::median;
using wit::bench::secs_since;

// Nearest rank: the smallest value with at least q of the values at or below it.
double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(std::max(1.0, std::ceil(q * double(v.size())))) - 1];
}

Digest random_digest(std::mt19937_64& rng) {
  Digest d;
  for (size_t i = 0; i < d.size(); i += 8) {
    const uint64_t w = rng();
    std::memcpy(d.data() + i, &w, 8);
  }
  return d;
}

struct Options {
  uint64_t samples = 1'000'000'000, docs = 1'000'000, val_docs = 10'000;
  size_t queries = 10'000, latency = 1'000, proofs = 10'000;
};

constexpr uint64_t kSeqLen = 1024, kMicroBatches = 8, kMicroBatchSize = 64, kEpochs = 3;
constexpr uint64_t kLongDocTokens = 1'000'000;
constexpr double kValFraction = 0.01;

struct Synthetic {
  wit::data::Manifest manifest;
  wit::witness::RunFacts run;
  uint64_t long_id = 0, filler_id = 0;
  double root_s = 0, layout_s = 0;  // what read_manifest and the index pay over the documents
};

// Documents obey the split rule (a val document's key is below the threshold), so held-out
// proofs check.
Synthetic make_synthetic(const Options& o, std::mt19937_64& rng) {
  Synthetic s;
  auto& m = s.manifest;
  m.tokenizer = "byte";
  m.vocab_size = 257;
  m.eot_token = 256;
  m.split_seed = 7;
  m.val_fraction = kValFraction;
  m.source = "synthetic";
  const uint64_t threshold = uint64_t(std::ceil(std::ldexp(kValFraction, 64)));
  auto hash_in = [&](uint8_t split) {
    for (;;) {
      const Digest d = random_digest(rng);
      if ((wit::data::split_key(m.split_seed, d) < threshold) == (split == wit::data::kSplitVal))
        return d;
    }
  };
  const uint64_t train_tokens = o.samples * kSeqLen + 1;  // (tokens − 1) / T = samples
  std::uniform_int_distribution<uint64_t> length(200, 4000);
  s.long_id = o.docs / 2;
  m.documents.reserve(o.docs + 1 + o.val_docs);
  uint64_t at = 0;
  for (uint64_t i = 0; i < o.docs; ++i) {
    const uint64_t len = i == s.long_id ? kLongDocTokens : length(rng);
    m.documents.push_back({i, wit::data::kSplitTrain, 0, at, len, hash_in(wit::data::kSplitTrain)});
    at += len;
  }
  if (at >= train_tokens) throw std::runtime_error("the documents do not fit the train stream");
  s.filler_id = o.docs;
  m.documents.push_back({s.filler_id, wit::data::kSplitTrain, 0, at, train_tokens - at,
                         hash_in(wit::data::kSplitTrain)});
  uint64_t val_at = 0;
  for (uint64_t i = 0; i < o.val_docs; ++i) {
    const uint64_t len = length(rng);
    m.documents.push_back(
        {o.docs + 1 + i, wit::data::kSplitVal, 1, val_at, len, hash_in(wit::data::kSplitVal)});
    val_at += len;
  }
  m.shards.push_back(
      {"train_000000.bin", wit::data::kSplitTrain, train_tokens, random_digest(rng)});
  m.shards.push_back({"val_000000.bin", wit::data::kSplitVal, val_at, random_digest(rng)});

  auto t0 = Clock::now();
  m.root = wit::data::manifest_root(m);  // real, so the proofs check against it
  s.root_s = secs_since(t0);
  t0 = Clock::now();
  wit::witness::RunMeta meta;
  meta.data_layout = wit::data::layout_digest(m);
  s.layout_s = secs_since(t0);
  meta.manifest_root = m.root;
  const uint64_t per_step = kMicroBatches * kMicroBatchSize;
  const uint64_t steps = (kEpochs * o.samples + per_step - 1) / per_step;
  meta.committed_yaml = wit::committed_yaml(wit::config::Config::parse(
      "", "benchmark", wit::run_schema(),
      {"data.seed=42", fmt::format("data.seq_len={}", kSeqLen),
       fmt::format("model.context={}", kSeqLen), fmt::format("train.micro_batches={}", kMicroBatches),
       fmt::format("train.micro_batch_size={}", kMicroBatchSize),
       fmt::format("train.steps={}", steps)}));
  meta.num_params = 124'439'808;
  const auto key = wit::witness::SigningKey::generate();
  meta.public_key = key.public_key();
  wit::witness::Heads head;
  head.genesis = meta.genesis();
  head.steps = steps;
  head.step_head = head.fingerprint_head = head.checkpoint_head = head.eval_head = random_digest(rng);
  s.run = wit::witness::RunFacts::from_signed_head(
      meta, head, key.sign(wit::witness::signed_message(wit::witness::head_hash(head))));
  return s;
}

struct Latency {
  std::string what;
  double median_us, p99_us, max_us;
  size_t n;
};

// Times `one(i)` for i < n, each call alone.
template <class F>
Latency time_each(const std::string& what, size_t n, F&& one) {
  std::vector<double> us;
  for (size_t i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    one(i);
    us.push_back(1e6 * secs_since(t0));
  }
  return {what, median(us), percentile(us, 0.99), *std::max_element(us.begin(), us.end()), n};
}

std::string ms(double s) { return fmt::format("{:.3f} ms", 1e3 * s); }

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const uint64_t v = std::stoull(argv[i + 1]);
    if (a == "--samples")
      o.samples = v;
    else if (a == "--docs")
      o.docs = v;
    else if (a == "--val-docs")
      o.val_docs = v;
    else if (a == "--queries")
      o.queries = v;
    else if (a == "--latency")
      o.latency = v;
    else if (a == "--proofs")
      o.proofs = v;
    else {
      fmt::print(stderr, "wit_bench_query: unknown option {}\n", a);
      return 2;
    }
  }
  try {
    if (o.docs < 2 || o.val_docs < 1 || o.queries < 1 || o.latency < 1 || o.proofs < 1)
      throw std::runtime_error("need --docs >= 2 and at least 1 of everything else");
    std::mt19937_64 rng(1);
    auto t0 = Clock::now();
    Synthetic syn = make_synthetic(o, rng);
    const double make_s = secs_since(t0);
    const uint64_t long_id = syn.long_id, steps = syn.run.steps;
    const Digest root = syn.manifest.root;
    fmt::print(
        "synthetic manifest: {} documents ({} train + 1 filler + {} val), {} samples of T = {}, "
        "{} steps of {} samples ({} epochs); built in {:.1f} s (Merkle root {:.2f} s, layout "
        "digest {:.2f} s)\n",
        syn.manifest.documents.size(), o.docs, o.val_docs, o.samples, kSeqLen, steps,
        kMicroBatches * kMicroBatchSize, kEpochs, make_s, syn.root_s, syn.layout_s);
    std::fflush(stdout);

    t0 = Clock::now();
    const DataIndex index(std::move(syn.manifest), std::move(syn.run), "synthetic");
    const double build_s = secs_since(t0);
    const auto& docs = index.manifest().documents;
    if (index.num_samples() != o.samples) throw std::runtime_error("wrong number of samples");

    // The first query after construction: the index's pages and the permutations are cold.
    std::uniform_int_distribution<uint64_t> train_doc(0, o.docs - 1);
    std::uniform_int_distribution<uint64_t> val_doc(o.docs + 1, o.docs + o.val_docs);
    std::uniform_int_distribution<uint64_t> any_doc(0, docs.size() - 1);
    uint64_t first_id = train_doc(rng);
    while (first_id == long_id) first_id = train_doc(rng);
    t0 = Clock::now();
    const Answer cold = index.query(docs[first_id].sha256, "cold");
    const double cold_s = secs_since(t0);
    if (cold.verdict != Verdict::Included || cold.occurrences.size() % kEpochs != 0)
      throw std::runtime_error("the cold query's answer is wrong");

    size_t sink = 0;  // keeps the answers observable
    auto ask = [&](const Digest& h) {
      const Answer a = index.query(h, "q");
      sink += a.occurrences.size() + a.document_ids.size();
      return a;
    };
    std::vector<Digest> train_q, val_q, absent_q;
    for (size_t i = 0; i < o.latency; ++i) {
      uint64_t id = train_doc(rng);
      while (id == long_id) id = train_doc(rng);
      train_q.push_back(docs[id].sha256);
      val_q.push_back(docs[val_doc(rng)].sha256);
      absent_q.push_back(random_digest(rng));
    }
    const size_t long_occurrences = ask(docs[long_id].sha256).occurrences.size();
    std::vector<Latency> lat;
    lat.push_back(time_each("train document (200-4,000 tokens)", o.latency,
                            [&](size_t i) { ask(train_q[i]); }));
    lat.push_back(
        time_each(fmt::format("document of 10^6 tokens ({} occurrences)", long_occurrences),
                  std::min<size_t>(o.latency, 100), [&](size_t) { ask(docs[long_id].sha256); }));
    lat.push_back(
        time_each("held-out (val) document", o.latency, [&](size_t i) { ask(val_q[i]); }));
    lat.push_back(time_each("not in the dataset", o.latency, [&](size_t i) { ask(absent_q[i]); }));

    // Throughput: a stream of mixed queries, hashes already computed.
    std::bernoulli_distribution in_dataset(0.9);
    std::vector<Digest> mix;
    for (size_t i = 0; i < o.queries; ++i) {
      uint64_t id = any_doc(rng);
      while (id == syn.filler_id) id = any_doc(rng);  // 3·10^9 occurrences: not a query to time
      mix.push_back(in_dataset(rng) ? docs[id].sha256 : random_digest(rng));
    }
    std::vector<double> rates;
    size_t verdicts[5] = {0, 0, 0, 0, 0};
    for (int r = 0; r < 3; ++r) {
      t0 = Clock::now();
      for (auto& h : mix) {
        const Answer a = ask(h);
        if (r == 0) ++verdicts[int(a.verdict)];
      }
      rates.push_back(double(mix.size()) / secs_since(t0));
    }

    // Proofs. DataIndex serves audit paths from a wit::MerkleTree kept in memory (built on the
    // first proof); beside it, a path rebuilt from the leaves each time (merkle_inclusion_proof).
    const wit::data::DocumentTree doc_tree = wit::data::document_tree(syn.manifest);
    const std::vector<Digest>& leaves = doc_tree.leaves;
    std::vector<Digest> sorted_hashes;
    for (auto& r : doc_tree.records) sorted_hashes.push_back(r.sha256);
    const wit::witness::TrustedRun trusted{root, syn.run.meta.genesis(), std::nullopt};
    t0 = Clock::now();
    const wit::MerkleTree tree(leaves);
    const double tree_s = secs_since(t0);
    if (tree.root() != wit::merkle_root(leaves)) throw std::runtime_error("tree root");
    for (size_t i : {size_t(0), leaves.size() / 3, leaves.size() - 1})
      if (tree.inclusion_proof(i) != wit::merkle_inclusion_proof(leaves, i))
        throw std::runtime_error("cached tree path differs from merkle_inclusion_proof");
    struct ProofRow {
      std::string what;
      double proof_s, check_s, merkle_s, bytes;
    };
    std::vector<ProofRow> proof_rows;
    auto prove = [&](const Digest& h, double* bytes) {
      const Answer a = ask(h);
      const auto p = index.proof(a);
      const auto c = wit::witness::check_proof(p, trusted);
      if (!c.ok) throw std::runtime_error("a proof does not check: " + c.reason);
      if (bytes) *bytes = double(p.dump().size());  // what a proof file holds, timed with it
    };
    auto proof_row = [&](const std::string& what, const Digest& h, int reps) {
      std::vector<double> pr, ch, mk, by;
      for (int r = 0; r < reps; ++r) {
        const Answer a = ask(h);
        auto t = Clock::now();
        const auto p = index.proof(a);
        pr.push_back(secs_since(t));
        t = Clock::now();
        const auto c = wit::witness::check_proof(p, trusted);
        ch.push_back(secs_since(t));
        if (!c.ok) throw std::runtime_error("a proof does not check: " + c.reason);
        // The leaves proof() proves: the document's, or the two around an absent one.
        const size_t at =
            size_t(std::lower_bound(sorted_hashes.begin(), sorted_hashes.end(), h) -
                   sorted_hashes.begin());
        std::vector<size_t> proven{at};
        if (a.verdict == Verdict::NotInDataset) proven = {at - 1, at};
        t = Clock::now();
        for (size_t i : proven)
          if (i < leaves.size()) sink += wit::merkle_inclusion_proof(leaves, i).size();
        mk.push_back(secs_since(t));
        by.push_back(double(p.dump().size()));
      }
      proof_rows.push_back({what, median(pr), median(ch), median(mk), median(by)});
      fmt::print("  proof of {}: {} + check {}\n", what, ms(median(pr)), ms(median(ch)));
      std::fflush(stdout);
    };
    proof_row("a train document", train_q[0], 3);
    proof_row("the document of 10^6 tokens", docs[long_id].sha256, 3);
    proof_row("a held-out document", val_q[0], 3);
    proof_row("a document not in the dataset (2 paths)", absent_q[0], 3);
    const Latency cached_path = time_each("cached path", o.latency, [&](size_t i) {
      sink += tree.inclusion_proof(size_t(i * 7919) % leaves.size()).size();
    });
    std::vector<double> proof_rates;
    std::vector<double> proof_bytes;
    for (int r = 0; r < 3; ++r) {
      t0 = Clock::now();
      for (size_t i = 0; i < o.proofs; ++i) {
        double b = 0;
        prove(mix[(r * o.proofs + i) % mix.size()], &b);
        proof_bytes.push_back(b);
      }
      proof_rates.push_back(double(o.proofs) / secs_since(t0));
      fmt::print("  proofs, pass {}/3: {:.2f} queries/s\n", r + 1, proof_rates.back());
      std::fflush(stdout);
    }

    // The table.
    const auto row = "{:<58} {:>34}  {}\n";
    fmt::print("\n");
    fmt::print(row, "measure", "value", "target");
    fmt::print(row, "manifest Merkle root over all documents (read_manifest)", ms(syn.root_s),
               "setup, report");
    fmt::print(row, "DataIndex construction (sort + layout digest)",
               fmt::format("{} (layout {})", ms(build_s), ms(syn.layout_s)), "setup, report");
    const double worst_s =
        std::max(cold_s, 1e-6 * std::max_element(lat.begin(), lat.end(), [](auto& a, auto& b) {
                                  return a.max_us < b.max_us;
                                })->max_us);
    fmt::print(row, "cold query (first after construction, train document)", ms(cold_s),
               fmt::format("< 100 ms: {}", cold_s < 0.1 ? "met" : "MISSED"));
    for (auto& l : lat)
      fmt::print(row, fmt::format("query, {} [n={}]", l.what, l.n),
                 fmt::format("{:.2f} / {:.2f} / {:.2f} us", l.median_us, l.p99_us, l.max_us),
                 "median / p99 / max");
    fmt::print(row, fmt::format("{} mixed queries, 1 thread, median of 3", o.queries),
               fmt::format("{:.0f} /s ({:.0f}, {:.0f}, {:.0f})", median(rates), rates[0], rates[1],
                           rates[2]),
               fmt::format(">= 10^4 /s: {}", median(rates) >= 1e4 ? "met" : "MISSED"));
    fmt::print(row, "  verdicts in the mix",
               fmt::format("{} included, {} held-out, {} absent", verdicts[int(Verdict::Included)],
                           verdicts[int(Verdict::HeldOut)], verdicts[int(Verdict::NotInDataset)]),
               "");
    for (auto& p : proof_rows)
      fmt::print(row, fmt::format("proof of {}", p.what),
                 fmt::format("{} + check {}, {:.0f} B", ms(p.proof_s), ms(p.check_s), p.bytes),
                 fmt::format("path rebuilt from the leaves {}", ms(p.merkle_s)));
    fmt::print(row, fmt::format("{} mixed queries with proof + check, median of 3", o.proofs),
               fmt::format("{:.2f} /s ({:.2f}, {:.2f}, {:.2f})", median(proof_rates),
                           proof_rates[0], proof_rates[1], proof_rates[2]),
               fmt::format("proof median {:.0f} B, max {:.0f} B", median(proof_bytes),
                           *std::max_element(proof_bytes.begin(), proof_bytes.end())));
    fmt::print(row, "Merkle path from a tree kept in memory (median / p99)",
               fmt::format("{:.2f} / {:.2f} us", cached_path.median_us, cached_path.p99_us),
               fmt::format("tree built once in {:.2f} s", tree_s));
    fmt::print("\none query < 100 ms (cold and every query timed): {} (worst {})\n",
               worst_s < 0.1 ? "met" : "MISSED", ms(worst_s));
    fmt::print(">= 10^4 queries/s on one thread: {} ({:.0f} /s)\n",
               median(rates) >= 1e4 ? "met" : "MISSED", median(rates));
    if (sink == 0) fmt::print("(no answers)\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_query: error: {}\n", e.what());
    return 1;
  }
}
