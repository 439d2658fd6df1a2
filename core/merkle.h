// Merkle trees in the shape of RFC 6962 (Certificate Transparency): roots, inclusion proofs and
// their verification. The dataset manifest commits to its documents with such a root.
//
// Protocol (the verifier re-derives it, so it never changes):
//   leaf hash  = SHA-256(0x00 || x)            x: a 32-byte value, e.g. a document's SHA-256
//   node hash  = SHA-256(0x01 || left || right)
//   MTH(D[0:n]) for n > 1 = node(MTH(D[0:k]), MTH(D[k:n])), k the largest power of two < n
//   MTH of one leaf = its leaf hash; MTH of no leaves = SHA-256("") (the empty string).
// Proofs are RFC 6962 audit paths: sibling hashes from the leaf up to the root.
//
//   std::vector<Digest> xs = ...;
//   Digest root = merkle_root(xs);
//   auto proof = merkle_inclusion_proof(xs, 7);
//   bool ok = merkle_verify_inclusion(xs[7], 7, xs.size(), proof, root);
#pragma once

#include <cstddef>
#include <vector>

#include "core/sha256.h"

namespace wit {

Digest merkle_leaf_hash(const Digest& x);
Digest merkle_node_hash(const Digest& left, const Digest& right);

// Root over the leaves H(0x00 || x) of the given x values, in the given order. O(n) time.
Digest merkle_root(const std::vector<Digest>& leaves_x);

// Audit path for leaf `index` (throws wit::Error when index >= leaves_x.size()). O(n) time.
std::vector<Digest> merkle_inclusion_proof(const std::vector<Digest>& leaves_x, size_t index);

// The whole tree kept in memory (every level: about 2n digests), for serving many proofs: each
// path is then O(log n) instead of a rebuild. Same root and same paths as the functions above.
class MerkleTree {
 public:
  explicit MerkleTree(const std::vector<Digest>& leaves_x);
  Digest root() const;
  size_t size() const { return levels_.empty() ? 0 : levels_[0].size(); }
  std::vector<Digest> inclusion_proof(size_t index) const;

 private:
  std::vector<std::vector<Digest>> levels_;  // levels_[0]: leaf hashes; the last: the root
};

// True iff `proof` shows that x is leaf `index` of a tree of `tree_size` leaves with `root`
// (RFC 9162 section 2.1.3.2). Never throws: a malformed proof is simply false.
bool merkle_verify_inclusion(const Digest& x, size_t index, size_t tree_size,
                             const std::vector<Digest>& proof, const Digest& root);

}  // namespace wit
