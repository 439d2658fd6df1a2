// `wit query`: was a document trained on, and when? Answered exactly from the run's committed
// dataset (manifest root) and data order (the schedule's inverse), with proofs anyone can check.
//
//   DataIndex index(read_manifest(dir / "manifest.h5"), RunFacts::from_log(log, report), dir);
//   Answer a = index.query(document_sha256(file_bytes), "essay.txt");
//   nlohmann::json proof = index.proof(a);
//   ProofCheck c = check_proof(proof, manifest_root);   // standalone: no dataset, no run
//
// A document is matched by the SHA-256 of its canonical bytes (trainer/data/corpus.h: "\r\n"
// becomes "\n", nothing else changes), the same hash `wit prepare` put in the manifest.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/merkle.h"
#include "core/sha256.h"
#include "trainer/data/manifest.h"
#include "trainer/data/schedule.h"
#include "witness/log/reader.h"

namespace wit::witness {

// What a query needs from the run: the data it committed to, its batch layout, how far it got.
struct RunFacts {
  Digest manifest_root{};
  Digest data_layout{};
  uint64_t data_seed = 0;
  uint64_t seq_len = 0, micro_batches = 0, micro_batch_size = 0;
  uint64_t steps = 0;                 // steps recorded in a verified chain
  std::vector<Digest> record_hashes;  // per step
  static RunFacts from_log(const WitnessLog& log, const LogReport& report);
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
  Included,      // in samples trained before the last recorded step
  HeldOut,       // in the manifest's held-out split: never in the training stream
  NotReached,    // a training document none of whose samples came before the last step
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
};

// SHA-256 of a document's canonical bytes.
Digest document_sha256(std::string_view raw_bytes);

// Everything a query needs is in the manifest: the documents' hashes, splits and token ranges
// (a document's place in the training stream follows from the shards' token counts, as
// data::Dataset lays them out). The shards themselves are never read.
class DataIndex {
 public:
  // The manifest must be the run's (same root); throws wit::Error otherwise. `where` names the
  // dataset in messages.
  DataIndex(data::Manifest manifest, RunFacts run, std::string where);

  Answer query(const Digest& sha256, std::string label) const;
  Answer query_bytes(std::string_view raw_bytes, std::string label) const;
  // Throws wit::Error when the id is not in the manifest.
  Answer query_id(uint64_t id) const;

  // A proof of the answer (format "wit-query-proof-v1", docs/query.md).
  nlohmann::json proof(const Answer& a) const;

  const RunFacts& run() const { return run_; }
  const data::Manifest& manifest() const { return manifest_; }
  uint64_t num_samples() const { return num_samples_; }
  size_t num_documents() const { return sorted_.size(); }
  // Offset of a document's first token (its leading end-of-text) in its split's stream.
  uint64_t stream_offset(const data::DocumentEntry& d) const;

 private:
  // [first, last] samples whose window holds one of the document's content tokens; empty when
  // first > last.
  std::pair<uint64_t, uint64_t> sample_range(const data::DocumentEntry& d) const;
  uint64_t position_in_epoch(uint64_t sample, uint64_t epoch) const;

  data::Manifest manifest_;
  RunFacts run_;
  std::string where_;
  std::vector<uint64_t> shard_offset_;  // per shard: its first token's place in its split
  uint64_t num_samples_ = 0;
  std::vector<std::pair<Digest, uint64_t>> sorted_;  // (sha256, document id), ascending
  std::vector<Digest> sorted_hashes_;                // the Merkle leaves, in tree order
  std::vector<data::Permutation> epochs_;            // every epoch the run began
  // Built on the first proof (2n digests); queries alone never pay for it.
  mutable std::unique_ptr<MerkleTree> tree_;
  const MerkleTree& tree() const;
};

struct ProofCheck {
  bool ok = false;
  std::string verdict;  // what the proof shows, when ok
  std::string reason;   // why not, when !ok; what was checked, when ok
};

// Checks a proof against a manifest root alone. Never throws for a malformed proof: it fails.
ProofCheck check_proof(const nlohmann::json& proof, const Digest& root);

}  // namespace wit::witness
