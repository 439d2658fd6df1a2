// RFC 6962 Merkle trees: roots of small trees computed by hand, agreement with the recursive
// definition, inclusion proofs that verify and that fail when anything is altered.
#include "core/merkle.h"

#include <gtest/gtest.h>

#include <chrono>

#include "core/error.h"

namespace wit {
namespace {

Digest x_of(int i) { return sha256("document " + std::to_string(i)); }

std::vector<Digest> xs(size_t n) {
  std::vector<Digest> v;
  for (size_t i = 0; i < n; ++i) v.push_back(x_of(int(i)));
  return v;
}

// Hand-rolled H(prefix || parts...), independent of merkle.cpp.
Digest h(uint8_t prefix, const Digest& a, const Digest* b = nullptr) {
  Sha256 s;
  s.update(&prefix, 1).update(a.data(), 32);
  if (b) s.update(b->data(), 32);
  return s.finish();
}
Digest leaf(int i) { return h(0x00, x_of(i)); }
Digest node(const Digest& l, const Digest& r) { return h(0x01, l, &r); }

// RFC 6962 section 2.1, literally.
Digest mth(const std::vector<Digest>& d, size_t lo, size_t hi) {
  size_t n = hi - lo;
  if (n == 0) return sha256("");
  if (n == 1) return h(0x00, d[lo]);
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  return node(mth(d, lo, lo + k), mth(d, lo + k, hi));
}

// RFC 6962 section 2.1.1 PATH(m, D[n]), literally.
std::vector<Digest> path(const std::vector<Digest>& d, size_t m, size_t lo, size_t hi) {
  size_t n = hi - lo;
  if (n <= 1) return {};
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  std::vector<Digest> p;
  if (m < k) {
    p = path(d, m, lo, lo + k);
    p.push_back(mth(d, lo + k, hi));
  } else {
    p = path(d, m - k, lo + k, hi);
    p.push_back(mth(d, lo, lo + k));
  }
  return p;
}

TEST(Merkle, leaf_and_node_hashes_use_domain_separation) {
  EXPECT_EQ(merkle_leaf_hash(x_of(0)), leaf(0));
  EXPECT_EQ(merkle_node_hash(leaf(0), leaf(1)), node(leaf(0), leaf(1)));
  EXPECT_NE(merkle_leaf_hash(x_of(0)), sha256(x_of(0).data(), 32));
}

TEST(Merkle, empty_tree_root_is_hash_of_empty_string) {
  EXPECT_EQ(merkle_root({}), sha256(""));
  EXPECT_EQ(to_hex(merkle_root({})),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Merkle, small_trees_match_hand_computed_roots) {
  EXPECT_EQ(merkle_root(xs(1)), leaf(0));
  EXPECT_EQ(merkle_root(xs(2)), node(leaf(0), leaf(1)));
  EXPECT_EQ(merkle_root(xs(3)), node(node(leaf(0), leaf(1)), leaf(2)));
  Digest four = node(node(leaf(0), leaf(1)), node(leaf(2), leaf(3)));
  EXPECT_EQ(merkle_root(xs(4)), four);
  EXPECT_EQ(merkle_root(xs(5)), node(four, leaf(4)));
  // 7 = 4 + (2 + 1): the right subtree is itself split at its largest power of two.
  EXPECT_EQ(merkle_root(xs(7)), node(four, node(node(leaf(4), leaf(5)), leaf(6))));
}

TEST(Merkle, roots_match_the_recursive_definition) {
  for (size_t n = 0; n <= 70; ++n) {
    std::vector<Digest> d = xs(n);
    ASSERT_EQ(merkle_root(d), mth(d, 0, n)) << n << " leaves";
  }
}

TEST(Merkle, leaf_order_matters) {
  std::vector<Digest> d = xs(6);
  Digest root = merkle_root(d);
  std::swap(d[2], d[3]);
  EXPECT_NE(merkle_root(d), root);
}

TEST(Merkle, inclusion_proofs_are_rfc_audit_paths_and_verify) {
  for (size_t n = 1; n <= 33; ++n) {
    std::vector<Digest> d = xs(n);
    Digest root = merkle_root(d);
    for (size_t i = 0; i < n; ++i) {
      std::vector<Digest> proof = merkle_inclusion_proof(d, i);
      ASSERT_EQ(proof, path(d, i, 0, n)) << n << " leaves, index " << i;
      ASSERT_TRUE(merkle_verify_inclusion(d[i], i, n, proof, root)) << n << " " << i;
    }
  }
}

TEST(Merkle, inclusion_proofs_fail_when_anything_changes) {
  for (size_t n : {2u, 3u, 5u, 8u, 13u}) {
    std::vector<Digest> d = xs(n);
    Digest root = merkle_root(d);
    for (size_t i = 0; i < n; ++i) {
      std::vector<Digest> proof = merkle_inclusion_proof(d, i);
      Digest x = d[i];
      x[7] ^= 1;  // a flipped byte in the document hash
      EXPECT_FALSE(merkle_verify_inclusion(x, i, n, proof, root));
      for (size_t j = 0; j < proof.size(); ++j) {  // a flipped byte in any proof element
        std::vector<Digest> bad = proof;
        bad[j][0] ^= 0x80;
        EXPECT_FALSE(merkle_verify_inclusion(d[i], i, n, bad, root)) << n << " " << i << " " << j;
      }
      Digest bad_root = root;
      bad_root[31] ^= 1;
      EXPECT_FALSE(merkle_verify_inclusion(d[i], i, n, proof, bad_root));
      EXPECT_FALSE(merkle_verify_inclusion(d[i], (i + 1) % n, n, proof, root));
      EXPECT_FALSE(merkle_verify_inclusion(d[i], n, n, proof, root));  // index out of range
      std::vector<Digest> longer = proof;
      longer.push_back(root);
      EXPECT_FALSE(merkle_verify_inclusion(d[i], i, n, longer, root));
      if (!proof.empty()) {
        std::vector<Digest> shorter(proof.begin(), proof.end() - 1);
        EXPECT_FALSE(merkle_verify_inclusion(d[i], i, n, shorter, root));
      }
    }
  }
}

TEST(Merkle, single_leaf_tree_has_an_empty_proof) {
  std::vector<Digest> d = xs(1);
  EXPECT_TRUE(merkle_inclusion_proof(d, 0).empty());
  EXPECT_TRUE(merkle_verify_inclusion(d[0], 0, 1, {}, merkle_root(d)));
  EXPECT_THROW(merkle_inclusion_proof(d, 1), Error);
  EXPECT_THROW(merkle_inclusion_proof({}, 0), Error);
}

TEST(Merkle, a_million_leaves_take_well_under_a_second) {
  std::vector<Digest> d(1'000'000);
  for (size_t i = 0; i < d.size(); ++i) {
    d[i].fill(0);
    for (int b = 0; b < 8; ++b) d[i][b] = uint8_t(i >> (8 * b));
  }
  auto start = std::chrono::steady_clock::now();
  Digest root = merkle_root(d);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("seconds", std::to_string(seconds));
  // About 0.3 s on one idle core (two SHA-256 calls per leaf, ~150 ns each); the bound leaves
  // room for a loaded machine but still catches a per-hash context allocation (~1.2 s).
  EXPECT_LT(seconds, 1.0);
  std::vector<Digest> proof = merkle_inclusion_proof(d, 654321);
  EXPECT_EQ(proof.size(), 20u);
  EXPECT_TRUE(merkle_verify_inclusion(d[654321], 654321, d.size(), proof, root));
}

TEST(MerkleTree, SameRootAndPathsAsTheFunctions) {
  for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(5), size_t(8), size_t(13),
                   size_t(64), size_t(100)}) {
    std::vector<Digest> xs;
    for (size_t i = 0; i < n; ++i) xs.push_back(sha256("leaf " + std::to_string(i)));
    const MerkleTree tree(xs);
    EXPECT_EQ(tree.root(), merkle_root(xs)) << n;
    EXPECT_EQ(tree.size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(tree.inclusion_proof(i), merkle_inclusion_proof(xs, i)) << n << " leaf " << i;
      EXPECT_TRUE(merkle_verify_inclusion(xs[i], i, n, tree.inclusion_proof(i), tree.root()));
    }
  }
}

}  // namespace
}  // namespace wit
