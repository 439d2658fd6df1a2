// `wit query`: was a document trained on, and when? Answered exactly from the run's committed
// dataset (manifest root) and data order (the schedule's inverse), with proofs anyone can check.
//
//   DataIndex index(read_manifest(dir / "manifest.h5"), RunFacts::from_log(log, report), dir);
//   Answer a = index.query(document_sha256(file_bytes), "essay.txt");
//   nlohmann::json proof = index.proof(a);
//   ProofCheck c = check_proof(proof, {manifest_root, genesis});  // no dataset, no run
//
// A document is matched by the SHA-256 of its canonical bytes (trainer/data/corpus.h: "\r\n"
// becomes "\n", nothing else changes), the same hash `wit prepare` put in the manifest.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/merkle.h"
#include "core/sha256.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/manifest.h"
#include "trainer/data/schedule.h"
#include "record/reader.h"

namespace wit::witness {

// What a query needs from the run, all of it committed: the run's genesis preimage (its
// committed config, dataset, model size and key), and a head its trainer signed, which fixes
// how many steps the answers cover.
struct RunFacts {
  RunMeta meta;
  Heads head;             // a signed head of the run's log
  Signature signature{};  // the trainer's signature of head_hash(head)
  // From the committed config:
  uint64_t data_seed = 0;
  uint64_t seq_len = 0, micro_batches = 0, micro_batch_size = 0;
  uint64_t steps = 0;        // steps the signed head covers: where answers end
  uint64_t total_steps = 0;  // train.steps: the run is complete when steps reaches it

  // From a log that verifies (throws otherwise): its last signed head.
  static RunFacts from_log(const WitnessLog& log, const LogReport& report);
  // From a run's committed facts and a head its key signed (parses the committed config).
  static RunFacts from_signed_head(RunMeta meta, const Heads& head, const Signature& signature);
  uint64_t end_position() const { return steps * micro_batches * micro_batch_size; }
};

// One time a document's tokens were in a trained sample.
struct Occurrence {
  uint64_t document_id = 0;  // which copy, when the dataset holds identical copies
  uint64_t sample = 0;       // window of T+1 tokens at train-stream offset sample·T
  uint64_t position = 0;     // global schedule position
  uint64_t epoch = 0, step = 0, micro = 0, row = 0;
};

enum class Verdict {
  Included,      // in samples trained before the last signed step
  HeldOut,       // in the manifest's held-out split: never in the training stream
  NotReached,    // a training document none of whose samples came before the last signed step
  NotInDataset,  // its hash is not in the manifest
  Empty,         // an empty document: `wit prepare` skips those
};
const char* verdict_name(Verdict v);

struct Answer {
  std::string label;  // what was asked: a file name, "id 17", "line 3 of docs.jsonl"
  Digest sha256{};
  Verdict verdict = Verdict::NotInDataset;
  std::vector<uint64_t> document_ids;   // every copy in the manifest
  std::string split;                    // "train", "val", or "" when not in the dataset
  std::vector<Occurrence> occurrences;  // ascending position
  // The document's records in the tree: [first, last) leaves; a not-in-dataset document's
  // insertion point is first == last.
  size_t first_leaf = 0, last_leaf = 0;
};

// SHA-256 of a document's canonical bytes: how a text dataset's records name documents.
Digest document_sha256(std::string_view raw_bytes);
// How an llm.c dataset's records (tokenizer external) name a document of these raw bytes: the
// SHA-256 of the little-endian uint16 tokens [50256] + GPT-2's encoding of them.
Digest llmc_document_sha256(std::string_view raw_bytes, const data::Gpt2Tokenizer& gpt2);

// Everything a query needs is in the manifest: the documents' hashes, splits and token ranges
// (as its Merkle tree commits to them). The shards themselves are never read.
class DataIndex {
 public:
  // The manifest must be the run's (same root and layout); throws wit::Error otherwise. `where`
  // names the dataset in messages.
  DataIndex(data::Manifest manifest, RunFacts run, std::string where);

  Answer query(const Digest& sha256, std::string label) const;
  // By the hash the dataset's records use for a document of these bytes: document_sha256 for
  // text datasets (wit prepare's byte and gpt2); for llm.c shards (tokenizer external), whose
  // records hash their tokens, the little-endian uint16 tokens llm.c makes of the raw text,
  // [50256] + GPT-2's encoding (a document tokenized any other way is not found).
  Digest document_hash(std::string_view raw_bytes) const;
  Answer query_bytes(std::string_view raw_bytes, std::string label) const;
  // Throws wit::Error when the id is not in the manifest.
  Answer query_id(uint64_t id) const;

  // A proof of the answer (format "wit-query-proof-v2", docs/query.md).
  nlohmann::json proof(const Answer& a) const;

  const RunFacts& run() const { return run_; }
  const data::Manifest& manifest() const { return manifest_; }
  uint64_t num_samples() const { return num_samples_; }
  size_t num_documents() const { return tree_.records.size(); }

 private:
  data::Manifest manifest_;
  RunFacts run_;
  std::string where_;
  data::DocumentTree tree_;
  uint64_t num_samples_ = 0;
  std::vector<data::Permutation> epochs_;  // every epoch the run began
  // Built on the first proof (2n digests); queries alone never pay for it.
  mutable std::unique_ptr<MerkleTree> merkle_;
  const MerkleTree& merkle() const;
  // Loaded on the first text query of an llm.c dataset.
  mutable std::unique_ptr<data::Gpt2Tokenizer> gpt2_;
};

// What a checker trusts: the dataset's root and the run's genesis, from the trainer's
// announcement or a verifier's certificate; with a certificate, also the signed head it names.
struct TrustedRun {
  Digest manifest_root{};
  Digest genesis{};
  std::optional<Digest> signed_head;
};

struct ProofCheck {
  bool ok = false;
  std::string verdict;  // what the proof shows, when ok
  std::string reason;   // why not, when !ok; what was checked, when ok
  uint64_t steps = 0;   // the signed steps the answer covers, when ok
  bool complete = false;  // those are all of the run's steps
};

// Checks a proof against what the checker trusts, and nothing else: every fact in it is bound to
// the root, the genesis or the trainer's signature, and the verdict and occurrences are
// recomputed from them. Never throws for a malformed proof: it fails.
// `walk_budget`, when given, is what the checker still spends on walking the schedule (samples
// × epochs) across a file of proofs: each proof takes its walk from it, and one that needs more
// than is left is invalid (else a file of many proofs, each within its own bound, could hold
// the checker for hours).
ProofCheck check_proof(const nlohmann::json& proof, const TrustedRun& trusted,
                       uint64_t* walk_budget = nullptr);
// The walk budget `wit query --check-proof` gives one file: ten proofs at their own bound.
constexpr uint64_t kProofFileWalkBudget = 1'000'000'000;

}  // namespace wit::witness
