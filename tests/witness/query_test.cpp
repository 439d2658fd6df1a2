// Data queries: answers agree with a brute-force scan of the schedule, proofs check alone, and
// any altered byte makes a proof fail.
#include "query/query.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "core/merkle.h"
#include "tests/data/temp_dir.h"
#include "trainer/data/dataset.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/prepare.h"
#include "trainer/data/shard.h"
#include "trainer/data/split.h"
#include "record/run_config.h"

namespace wit::witness {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

// A small corpus: documents of very different lengths (some span many samples), one duplicated.
std::vector<std::string> corpus() {
  std::vector<std::string> docs;
  for (int i = 0; i < 60; ++i) {
    std::string d = "document " + std::to_string(i) + ":";
    for (int k = 0; k < (i * 7) % 23 + 1; ++k) d += " word" + std::to_string(k * i);
    docs.push_back(d + "\n");
  }
  docs.push_back(docs[5]);  // an identical copy
  return docs;
}

// A run of `manifest` (T = 16, M = 2, b = 3) of `total_steps`, whose trainer signed a head
// after `signed_steps`.
RunFacts run_facts(const data::Manifest& manifest, const SigningKey& key, uint64_t total_steps,
                   uint64_t signed_steps) {
  RunMeta meta;
  meta.committed_yaml = committed_yaml(config::Config::parse(
      "", "test", run_schema(),
      {"data.seed=5", "data.seq_len=16", "train.micro_batches=2", "train.micro_batch_size=3",
       "train.steps=" + std::to_string(total_steps)}));
  meta.manifest_root = manifest.root;
  meta.data_layout = data::layout_digest(manifest);
  meta.num_params = 1234;
  meta.public_key = key.public_key();
  Heads head;
  head.genesis = meta.genesis();
  head.steps = signed_steps;
  head.step_head = sha256("record " + std::to_string(signed_steps));
  head.fingerprint_head = head.checkpoint_head = head.eval_head = head.genesis;
  return RunFacts::from_signed_head(meta, head, key.sign(signed_message(head_hash(head))));
}

struct QueryFixture {
  TempDir dir;
  std::unique_ptr<data::Dataset> dataset;
  QueryFixture() {
    std::ofstream out(dir / "corpus.txt");
    for (auto& d : corpus()) out << d << "<|endoftext|>\n";
    out.close();
    data::PrepareOptions o;
    o.input = dir / "corpus.txt";
    o.out = dir / "data";
    o.val_fraction = 0.2;
    o.shard_tokens = 300;  // many shards: sample windows straddle them
    data::prepare(o);
    dataset = std::make_unique<data::Dataset>(data::Dataset::open(dir / "data"));
  }
  SigningKey key = SigningKey::generate();
  // A run of this dataset whose trainer signed a head after `steps` of its 1000 steps.
  RunFacts facts(uint64_t steps) const { return run_facts(dataset->manifest(), key, 1000, steps); }
  TrustedRun trusted() const {
    RunFacts f = facts(0);
    return {f.meta.manifest_root, f.meta.genesis(), std::nullopt};
  }
};

// Every (document id, position) at which a window holding one of the document's content tokens
// was trained, by scanning every position of the schedule.
std::map<uint64_t, std::set<uint64_t>> brute_force(const data::Dataset& ds, const RunFacts& f,
                                                   uint64_t num_samples) {
  const data::Schedule schedule(num_samples, f.data_seed);
  std::map<uint64_t, std::set<uint64_t>> hits;
  for (uint64_t p = 0; p < f.end_position(); ++p) {
    const uint64_t s = schedule.sample_at(p), lo = s * f.seq_len, hi = lo + f.seq_len;
    for (auto& d : ds.manifest().documents) {
      if (d.split != data::kSplitTrain) continue;
      const uint64_t a = ds.stream_offset(d);
      if (lo < a + d.length && hi >= a + 1) hits[d.id].insert(p);
    }
  }
  return hits;
}

TEST(Query, AgreesWithABruteForceScanOfTheSchedule) {
  QueryFixture fx;
  const RunFacts f = fx.facts(200);
  DataIndex index(fx.dataset->manifest(), f, "test data");
  ASSERT_GT(f.end_position(), 2 * index.num_samples());  // several epochs
  const auto hits = brute_force(*fx.dataset, f, index.num_samples());
  int included = 0, held_out = 0;
  for (auto& d : fx.dataset->manifest().documents) {
    const Answer a = index.query_id(d.id);
    std::set<uint64_t> found;
    for (auto& o : a.occurrences)
      if (o.document_id == d.id) found.insert(o.position);
    const auto it = hits.find(d.id);
    EXPECT_EQ(found, it == hits.end() ? std::set<uint64_t>{} : it->second) << "document " << d.id;
    if (d.split == data::kSplitTrain) {
      EXPECT_EQ(a.verdict, Verdict::Included) << d.id;
      ++included;
    } else {
      EXPECT_EQ(a.verdict, Verdict::HeldOut) << d.id;
      EXPECT_TRUE(a.occurrences.empty());
      ++held_out;
    }
    for (auto& o : a.occurrences) {
      EXPECT_EQ(o.step, o.position / 6);
      EXPECT_EQ(o.micro, (o.position / 3) % 2);
      EXPECT_EQ(o.row, o.position % 3);
    }
  }
  EXPECT_GT(included, 20);
  EXPECT_GT(held_out, 3);
}

TEST(Query, ADocumentTrainedInTwoEpochsListsBoth) {
  QueryFixture fx;
  DataIndex index(fx.dataset->manifest(), fx.facts(200), "test data");
  bool found = false;
  for (auto& d : fx.dataset->manifest().documents) {
    const Answer a = index.query_id(d.id);
    std::set<uint64_t> epochs;
    for (auto& o : a.occurrences) epochs.insert(o.epoch);
    if (epochs.count(0) && epochs.count(1)) found = true;
  }
  EXPECT_TRUE(found);
}

TEST(Query, IdenticalCopiesAreOneAnswerWithBothIds) {
  QueryFixture fx;
  DataIndex index(fx.dataset->manifest(), fx.facts(200), "test data");
  const Answer a = index.query_bytes(corpus()[5], "copy");
  EXPECT_EQ(a.document_ids.size(), 2u);
}

TEST(Query, UnknownEmptyAndOutOfRange) {
  QueryFixture fx;
  DataIndex index(fx.dataset->manifest(), fx.facts(10), "test data");
  EXPECT_EQ(index.query_bytes("never in this corpus\n", "x").verdict, Verdict::NotInDataset);
  EXPECT_EQ(index.query_bytes("", "empty").verdict, Verdict::Empty);
  // Canonical bytes: CRLF line ends match the LF document that was prepared.
  std::string crlf = corpus()[7];
  crlf.replace(crlf.size() - 1, 1, "\r\n");
  EXPECT_EQ(index.query_bytes(crlf, "crlf").sha256, index.query_bytes(corpus()[7], "lf").sha256);
  EXPECT_TRUE(
      contains(error_of([&] { index.query_id(1000); }), "document id 1000 is out of range"));
  RunFacts other = fx.facts(10);
  other.meta.manifest_root = sha256("another dataset");
  EXPECT_TRUE(contains(error_of([&] { DataIndex(fx.dataset->manifest(), other, "test data"); }),
                       "give the run's dataset"));
}

// llm.c shards' records hash each document's tokens, so a text query is tokenized as llm.c
// tokenizes: [50256] + GPT-2's encoding of the raw text. (Hashing the text instead answered
// not-in-dataset for every document, with a proof that checked.)
TEST(Query, TextQueriesOfLlmcShardsAreTokenizedAsLlmcDoes) {
  QueryFixture fx;
  const auto gpt2 = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir({}));
  std::vector<uint16_t> tokens;
  for (const auto& d : corpus()) {
    tokens.push_back(data::kGpt2Eot);
    const auto body = gpt2->encode(d);
    tokens.insert(tokens.end(), body.begin(), body.end());
  }
  std::filesystem::create_directories(fx.dir / "llmc");
  {
    data::ShardWriter w(fx.dir / "llmc/fw_train_000000.bin");
    w.append(tokens.data(), tokens.size());
    w.finish();
  }
  data::PrepareOptions o;
  o.input = fx.dir / "llmc";
  o.out = fx.dir / "llmc_data";
  data::prepare(o);
  fx.dataset = std::make_unique<data::Dataset>(data::Dataset::open(o.out));
  ASSERT_EQ(fx.dataset->manifest().tokenizer, "external");
  fx.dataset->verify_documents();
  DataIndex index(fx.dataset->manifest(), fx.facts(1000), "llmc data");
  const Answer seventh = index.query_bytes(corpus()[7], "doc 7");
  EXPECT_EQ(seventh.document_ids, std::vector<uint64_t>{7});
  EXPECT_EQ(seventh.verdict, Verdict::Included);
  EXPECT_EQ(seventh.sha256, fx.dataset->manifest().documents[7].sha256);
  EXPECT_NE(seventh.sha256, document_sha256(corpus()[7]));
  EXPECT_EQ(index.query_bytes(corpus()[5], "doc 5").document_ids, (std::vector<uint64_t>{5, 60}));
  EXPECT_EQ(index.query_bytes("never in this corpus\n", "x").verdict, Verdict::NotInDataset);
}

// A schedule a proof's checker would refuse gets no answer either, before any memory is spent
// on its epochs (each would hold a permutation).
TEST(Query, RunsBeyondWhatAProofCanCoverGetNoAnswer) {
  QueryFixture fx;
  const std::string msg =
      error_of([&] { DataIndex(fx.dataset->manifest(), fx.facts(100'000'000), "test data"); });
  EXPECT_TRUE(contains(msg, "wit query answers (and a proof is checked) over at most 1000000"))
      << msg;
}

// A trainer's dataset may hold a document spanning most of a long run's samples: answering for
// it, or checking a proof of it, walks a permutation inverse per sample and epoch and holds an
// occurrence for each. Both refuse beyond a bound, before walking.
TEST(Query, DocumentsSpanningTooManySamplesGetNoAnswer) {
  // 10^6 samples of T = 16; document 0 spans 200,000 of them. The shards are never read.
  data::Manifest m;
  m.tokenizer = "byte";
  m.vocab_size = 257;
  m.eot_token = 256;
  m.source = "synthetic";
  const uint64_t train = 16'000'001, long_doc = 3'200'000;
  m.shards = {{"train_000000.bin", 0, train, sha256("train shard")},
              {"val_000000.bin", 1, 10, sha256("val shard")}};
  m.documents = {{0, 0, 0, 0, long_doc, sha256("long")},
                 {1, 0, 0, long_doc, train - long_doc, sha256("the rest")},
                 {2, 1, 1, 0, 10, sha256("held out")}};
  m.root = data::manifest_root(m);
  const SigningKey key = SigningKey::generate();
  const uint64_t steps = 166'666'667;  // 1,001 epochs begun
  const DataIndex whole_run(m, run_facts(m, key, steps, steps), "synthetic data");
  EXPECT_TRUE(contains(error_of([&] { whole_run.query_id(0); }),
                       "id 0: its copies span 200200000 samples × epochs of the schedule; wit "
                       "query answers (and a proof is checked) over at most 100000000"));
  EXPECT_EQ(whole_run.query_id(2).verdict, Verdict::HeldOut);

  // A proof of document 0 made after one step (one epoch) checks; under the head signed at the
  // run's end it is refused before the walk.
  const DataIndex one_step(m, run_facts(m, key, steps, 1), "synthetic data");
  nlohmann::json p = one_step.proof(one_step.query_id(0));
  const TrustedRun trusted{m.root, one_step.run().meta.genesis(), std::nullopt};
  ASSERT_TRUE(check_proof(p, trusted).ok) << check_proof(p, trusted).reason;
  // A file of proofs shares one walk budget: each proof takes its walk (here 200,000 samples
  // × 1 epoch), and one that needs more than is left is invalid.
  uint64_t budget = 300'000;
  EXPECT_TRUE(check_proof(p, trusted, &budget).ok);
  EXPECT_EQ(budget, 100'000u);
  EXPECT_TRUE(contains(check_proof(p, trusted, &budget).reason, "took the checker's budget for one file"));
  p["signed_head"] = whole_run.proof(whole_run.query_id(2))["signed_head"];
  EXPECT_TRUE(contains(check_proof(p, trusted).reason,
                       "the document's copies span 200200000 samples × epochs of the schedule; a "
                       "proof is checked over at most 100000000"))
      << check_proof(p, trusted).reason;
}

// The root commits to each document's split and place: the same documents split otherwise are
// another dataset, refused by root (and the layout digest would refuse it too).
TEST(Query, SameDocumentsSplitDifferentlyIsAnotherDataset) {
  QueryFixture fx;
  data::PrepareOptions o;
  o.input = fx.dir / "corpus.txt";
  o.out = fx.dir / "resplit";
  o.val_fraction = 0.5;
  data::prepare(o);
  const auto other = data::Dataset::open(fx.dir / "resplit");
  EXPECT_NE(other.manifest().root, fx.dataset->manifest().root);
  EXPECT_NE(data::layout_digest(other.manifest()), data::layout_digest(fx.dataset->manifest()));
  EXPECT_TRUE(contains(error_of([&] { DataIndex(other.manifest(), fx.facts(10), "resplit"); }),
                       "give the run's dataset"));
}

TEST(Query, NotReachedBeforeTheRunEnded) {
  QueryFixture fx;
  DataIndex index(fx.dataset->manifest(), fx.facts(2), "test data");  // 12 of the samples trained
  int not_reached = 0;
  for (auto& d : fx.dataset->manifest().documents) {
    const Answer a = index.query_id(d.id);
    if (a.verdict != Verdict::NotReached) continue;
    ++not_reached;
    const ProofCheck c = check_proof(index.proof(a), fx.trusted());
    ASSERT_TRUE(c.ok) << c.reason;
    EXPECT_EQ(c.verdict, "not-reached");
    EXPECT_EQ(c.steps, 2u);
    EXPECT_FALSE(c.complete);
  }
  EXPECT_GT(not_reached, 10);
}

// Proofs of each verdict check alone; any byte changed makes them fail, or (another document
// hash between the same two leaves) prove something just as true.
TEST(QueryProof, EveryVerdictChecksAloneAndAnyFlippedByteFails) {
  QueryFixture fx;
  DataIndex index(fx.dataset->manifest(), fx.facts(200), "test data");
  const TrustedRun trusted = fx.trusted();
  std::map<Verdict, nlohmann::json> proofs;
  for (auto& d : fx.dataset->manifest().documents) {
    const Answer a = index.query_id(d.id);
    if (!proofs.count(a.verdict)) proofs[a.verdict] = index.proof(a);
  }
  proofs[Verdict::NotInDataset] = index.proof(index.query_bytes("not here\n", "x"));
  ASSERT_EQ(proofs.size(), 3u);  // included, held-out, not-in-dataset
  for (auto& [verdict, proof] : proofs) {
    const ProofCheck good = check_proof(proof, trusted);
    ASSERT_TRUE(good.ok) << verdict_name(verdict) << ": " << good.reason;
    EXPECT_EQ(good.verdict, verdict_name(verdict));
    TrustedRun other = trusted;
    other.manifest_root = sha256("other root");
    EXPECT_FALSE(check_proof(proof, other).ok);
    other = trusted;
    other.genesis = sha256("other run");
    EXPECT_FALSE(check_proof(proof, other).ok);
    other = trusted;
    other.signed_head = sha256("another head");
    EXPECT_FALSE(check_proof(proof, other).ok);
    const std::string text = proof.dump();
    for (size_t i = 0; i < text.size(); ++i) {
      std::string bad = text;
      bad[i] = bad[i] == '1' ? '2' : (bad[i] == 'a' ? 'b' : '1');
      auto j = nlohmann::json::parse(bad, nullptr, false);
      if (j.is_discarded()) continue;  // no longer JSON: fails to load at all
      // A changed proof either fails, or still states a true fact: another hash in the same
      // gap between two leaves is just as much not in the dataset.
      const ProofCheck c = check_proof(j, trusted);
      if (c.ok) {
        const Answer truth =
            index.query(digest_from_hex(j["document_sha256"].get<std::string>(), "sha"), "x");
        EXPECT_EQ(c.verdict, verdict_name(truth.verdict))
            << verdict_name(verdict) << " proof with byte " << i << " changed proves a falsehood";
        EXPECT_NE(j["document_sha256"], proof["document_sha256"])
            << verdict_name(verdict) << " proof with byte " << i << " changed still checks";
      }
    }
  }
}

// A forger who edits a proof's facts is caught by what binds them: the root, the genesis (whose
// committed config fixes the schedule) and the trainer's signature.
TEST(QueryProof, ForgedProofsFail) {
  QueryFixture fx;
  DataIndex index(fx.dataset->manifest(), fx.facts(200), "test data");
  const TrustedRun trusted = fx.trusted();
  nlohmann::json included;
  for (auto& d : fx.dataset->manifest().documents) {
    const Answer a = index.query_id(d.id);
    if (a.verdict == Verdict::Included) {
      included = index.proof(a);
      break;
    }
  }
  ASSERT_TRUE(check_proof(included, trusted).ok);
  ASSERT_GE(included["occurrences"].size(), 2u);
  auto p = included;
  p["occurrences"].erase(1);  // the checker holds no more occurrences than the proof lists
  EXPECT_TRUE(contains(check_proof(p, trusted).reason, "the occurrences are not exactly those"))
      << check_proof(p, trusted).reason;
  p = included;
  p["occurrences"][0]["position"] = p["occurrences"][0]["position"].get<uint64_t>() + 1;
  EXPECT_TRUE(contains(check_proof(p, trusted).reason, "occurrence 0 is not the one"));
  p = included;
  p["document_sha256"] = to_hex(sha256("another document"));
  EXPECT_FALSE(check_proof(p, trusted).ok);
  // Claiming a trained document was held out, or not reached, or not in the dataset.
  for (const char* claim : {"held-out", "not-reached", "not-in-dataset"}) {
    p = included;
    p["verdict"] = claim;
    EXPECT_TRUE(contains(check_proof(p, trusted).reason, "but its facts give 'included'")) << claim;
  }
  // "Not reached" by claiming fewer steps: the signed head does not say so.
  p = included;
  p["signed_head"]["steps"] = uint64_t(1);
  p["occurrences"] = nlohmann::json::array();
  p["verdict"] = "not-reached";
  EXPECT_TRUE(contains(check_proof(p, trusted).reason, "not signed by the run's key"))
      << check_proof(p, trusted).reason;
  // ... or another data seed: the committed config is the genesis's.
  p = included;
  std::string yaml = p["run"]["committed_yaml"];
  yaml.replace(yaml.find("seed: 5"), 7, "seed: 6");
  p["run"]["committed_yaml"] = yaml;
  EXPECT_TRUE(contains(check_proof(p, trusted).reason, "not the trusted"));
  // A held-out leaf for the document: its record is not in the tree.
  p = included;
  for (auto& l : p["leaves"])
    if (l["sha256"] == p["document_sha256"]) l["split"] = uint64_t(1);
  p["verdict"] = "held-out";
  p["occurrences"] = nlohmann::json::array();
  EXPECT_TRUE(contains(check_proof(p, trusted).reason, "is not in the tree"))
      << check_proof(p, trusted).reason;
  // Leaving a copy out.
  const Answer copies = index.query_bytes(corpus()[5], "copy");
  ASSERT_EQ(copies.document_ids.size(), 2u);
  p = index.proof(copies);
  ASSERT_TRUE(check_proof(p, trusted).ok);
  p["leaves"].erase(1);
  EXPECT_FALSE(check_proof(p, trusted).ok);
  EXPECT_TRUE(contains(check_proof(nlohmann::json::parse("{}"), trusted).reason, "missing field"));
  EXPECT_FALSE(check_proof(nlohmann::json::parse("[1, 2]"), trusted).ok);
}

}  // namespace
}  // namespace wit::witness
