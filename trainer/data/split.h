// Train / validation split of documents: a keyed hash of each document's content, so a
// document's split depends only on its bytes and the seed, never on the corpus order.
//
// Protocol "wit-split-v1":
//   key(doc) = first 8 bytes, little-endian, of
//              SHA-256("wit-split-v1" || u64le(seed) || sha256(doc))
//   doc is held out (val) iff key(doc) < ceil(val_fraction * 2^64)   (exact: val_fraction < 1)
//   Then, for tiny corpora, two corrections that also look only at keys:
//   - if val_fraction > 0, there are >= 2 documents, and none is val: the documents with the
//     smallest key go to val;
//   - if every document is val: the documents with the largest key go to train.
//   "The documents with key k" includes every identical copy, so duplicates never straddle splits.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sha256.h"

namespace wit::data {

constexpr uint8_t kSplitTrain = 0;
constexpr uint8_t kSplitVal = 1;

uint64_t split_key(uint64_t seed, const Digest& document_sha256);

// val_fraction in [0, 1) (throws wit::Error otherwise). One entry per document, in order.
std::vector<uint8_t> assign_splits(const std::vector<Digest>& document_sha256, uint64_t seed,
                                   double val_fraction);

const char* split_name(uint8_t split);  // "train", "val"

}  // namespace wit::data
