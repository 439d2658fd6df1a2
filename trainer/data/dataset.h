// A prepared data dir opened for training: its validated manifest and the train and val token
// streams, with every shard checked against the manifest's token counts.
//
//   Dataset data = Dataset::open("data/kjv");
//   data.train().read(offset, T + 1, buffer);
//   data.verify_shard_hashes();  // optional: rehashes every shard (slow on big data)
#pragma once

#include <cstdint>
#include <filesystem>

#include "trainer/data/manifest.h"
#include "trainer/data/shard.h"

namespace wit::data {

namespace fs = std::filesystem;

class Dataset {
 public:
  // Throws wit::Error when `dir` has no manifest.h5 ("... run wit prepare"), when the manifest
  // is invalid, or when a shard is missing, corrupt, or disagrees with the manifest.
  static Dataset open(const fs::path& dir);

  const Manifest& manifest() const { return manifest_; }
  const TokenStream& train() const { return train_; }
  const TokenStream& val() const { return val_; }
  const TokenStream& split(uint8_t split) const;  // kSplitTrain or kSplitVal
  int vocab_size() const { return manifest_.vocab_size; }
  int eot_token() const { return manifest_.eot_token; }
  const fs::path& dir() const { return dir_; }

  // Offset of a document's first token within its split's token stream.
  uint64_t stream_offset(const DocumentEntry& document) const;

  // Recomputes every shard file's SHA-256 and compares it with the manifest.
  void verify_shard_hashes() const;

  // Checks every document record against the tokens it names, so that a record's hash says
  // what was trained (wit query answers from the records alone): per split, the records cover
  // its token stream exactly once, in order; each begins with the end-of-text token (but an
  // llm.c split's first, which may begin mid-document) and holds no other; every token is in
  // the vocabulary; and the record's SHA-256 is that of what its tokens are: the canonical
  // text they decode to (byte, gpt2; canonical bytes hold no "\r\n") or the little-endian
  // tokens themselves (external, whose tokens after the end-of-text must also be GPT-2's
  // encoding of the bytes they decode to, since wit query finds such a document by that
  // encoding of its text). gpt2 and external datasets need GPT-2's vocabulary (`gpt2_vocab`,
  // as gpt2_vocab_dir takes it). Reads every token once; throws wit::Error naming the first
  // record that does not hold. Returns the tokens in records that begin mid-document (an llm.c
  // split's first record may continue a document begun elsewhere): no text query finds them.
  // The work can be shared: `part` of `parts` reads every parts-th record of each split (and
  // checks that the records cover it); all parts together check every record.
  uint64_t verify_documents(const fs::path& gpt2_vocab = {}, int part = 0, int parts = 1) const;

  // The manifest's tokenizer label decides how wit query hashes a document's text, and only
  // gpt2's is in the layout digest: a byte manifest relabelled external (or back) keeps its
  // root and layout and would make every text query miss. So the first record of each split is
  // checked under the label, from shards whose SHA-256 is checked first (a record is hashed the
  // same way under no two labels). Throws wit::Error saying the label is not the data's.
  void check_tokenizer_label(const fs::path& gpt2_vocab = {}) const;

 private:
  Dataset() = default;
  fs::path dir_;
  Manifest manifest_;
  TokenStream train_, val_;
  std::vector<uint64_t> shard_stream_offset_;  // per manifest shard: first token in its split
};

}  // namespace wit::data
