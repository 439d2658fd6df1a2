// The dataset manifest (manifest.h5 in a prepared data dir): every shard and every document,
// with SHA-256s, and a Merkle root over the documents that the witness log commits to.
//
// HDF5 layout (readable by h5py / h5dump; latest file format, so its metadata is checksummed;
// every string fixed-length):
//   /                  attributes: format_version, tokenizer, vocab_size, eot_token, split_seed,
//                      val_fraction, split_rule, source, root (64 hex digits); with tokenizer
//                      gpt2 also tokenizer_vocab (64 hex digits: the vocabulary files' digest)
//   /shards/file       (S,) fixed-length UTF-8 strings: file names inside the data dir
//   /shards/split      (S,) uint8: 0 train, 1 val
//   /shards/tokens     (S,) uint64
//   /shards/sha256     (S, 32) uint8: of the whole .bin file
//   /documents/id      (D,) uint64: equal to the row index
//   /documents/split   (D,) uint8
//   /documents/shard   (D,) uint32: row in /shards
//   /documents/offset  (D,) uint64: token offset of the document's first token in that shard
//   /documents/length  (D,) uint64: tokens, the leading EOT included
//   /documents/sha256  (D, 32) uint8: of the document's canonical bytes
// root = H("wit-manifest-v2" ‖ u64 D ‖ tree root ‖ u64 train tokens ‖ u64 val tokens), the tree
// an RFC 6962 Merkle tree (core/merkle.h) over one record per document, sorted by content hash:
// H("wit-document-v2" ‖ sha256 ‖ u64 split ‖ u64 stream offset ‖ u64 length). The root thus fixes
// each document's split and place in its split's stream and the streams' lengths, so a proof
// against the root alone shows where a document is; identical documents appear once per copy.
//
//   Manifest m = read_manifest(dir / "manifest.h5");  // validated, root recomputed
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/sha256.h"

namespace wit::data {

namespace fs = std::filesystem;

constexpr int kManifestFormatVersion = 2;
constexpr const char* kManifestFile = "manifest.h5";
// How documents were assigned to splits: by keyed content hash (trainer/data/split.h), or, for
// shards prepared elsewhere (format llmc), by shard file name ("val" in the name = val).
constexpr const char* kSplitRuleHash = "wit-split-v1";
constexpr const char* kSplitRuleFileName = "llmc-file-name";

struct ShardEntry {
  std::string file;   // name relative to the data dir
  uint8_t split = 0;  // 0 train, 1 val
  uint64_t tokens = 0;
  Digest sha256{};  // of the whole .bin file
};

struct DocumentEntry {
  uint64_t id = 0;
  uint8_t split = 0;
  uint32_t shard = 0;  // index into Manifest::shards
  // Token offset within that shard. A document may run on past the end of its shard into the
  // next shard of the same split (only for llmc input, whose shards cut documents anywhere).
  uint64_t offset = 0;
  uint64_t length = 0;  // tokens, including the leading EOT
  Digest sha256{};      // of canonical bytes
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  std::string tokenizer;  // "byte", "gpt2" (wit prepare's) or "external" (llm.c shards)
  Digest tokenizer_vocab{};  // gpt2: Gpt2Tokenizer::vocab_digest() of the files that tokenized it
  int vocab_size = 0;
  int eot_token = 0;
  uint64_t split_seed = 0;
  double val_fraction = 0.0;
  std::string split_rule = kSplitRuleHash;
  std::string source;  // what was prepared: an input path or "kjv"
  std::vector<ShardEntry> shards;
  std::vector<DocumentEntry> documents;
  Digest root{};
};

// Validates `m` (as read_manifest does), then writes it atomically: temporary file, fsync, rename.
void write_manifest(const fs::path& path, const Manifest& m);
// Reads and validates: format version, array lengths, ids, splits, shard indices and token
// ranges, and that `root` recomputes from the documents. Errors name the file and the field.
Manifest read_manifest(const fs::path& path);
// What the Merkle tree holds for one document.
struct DocumentRecord {
  Digest sha256{};
  uint8_t split = 0;
  uint64_t stream_offset = 0;  // of its leading end-of-text token, in its split's stream
  uint64_t length = 0;         // tokens, the leading end-of-text included
};
Digest record_digest(const DocumentRecord& r);
// Sort order of the tree: by content hash, then split, then place.
bool record_before(const DocumentRecord& a, const DocumentRecord& b);

// The documents as the tree holds them.
struct DocumentTree {
  std::vector<DocumentRecord> records;  // sorted by record_before
  std::vector<uint64_t> ids;            // the document id of each record
  std::vector<Digest> leaves;           // record_digest of each record: the tree's leaves
  uint64_t split_tokens[2] = {0, 0};    // length of the train and val streams
};
DocumentTree document_tree(const Manifest& m);
Digest manifest_root_from(const Digest& tree_root, uint64_t documents, uint64_t train_tokens,
                          uint64_t val_tokens);
// The root above, computed from the documents and shards.
Digest manifest_root(const Manifest& m);
// Commitment to the dataset's layout: which documents are in which split, where, and the shards'
// contents. The root commits to the set of documents only; two datasets of the same documents
// split or sharded differently have the same root but different training streams, and a run
// commits to both (its genesis covers this digest).
//   H("wit-data-layout-v1" ‖ u64 S ‖ per shard: u64 split ‖ u64 tokens ‖ sha256
//     ‖ u64 D ‖ per document: u64 split ‖ u64 shard ‖ u64 offset ‖ u64 length ‖ sha256)
Digest layout_digest(const Manifest& m);
// The checks read_manifest applies; `where` names the manifest in messages.
void validate_manifest(const Manifest& m, const std::string& where);

}  // namespace wit::data
