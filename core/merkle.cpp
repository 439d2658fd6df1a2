// RFC 6962 Merkle trees, computed bottom-up: pairing nodes level by level and carrying an odd
// last node up unchanged gives exactly the MTH shape (split at the largest power of two < n).
#include "core/merkle.h"

#include <openssl/evp.h>

#include <cstring>

#include "core/error.h"

namespace wit {

namespace {

// One reusable OpenSSL context and one explicitly fetched digest: a tree over 10^6 documents
// hashes 2·10^6 short messages, and a context per message (as wit::Sha256 makes) or OpenSSL 3's
// implicit fetch on every init (EVP_sha256()) would cost 3-4 times the hashing itself.
class TreeHasher {
 public:
  TreeHasher() : ctx_(EVP_MD_CTX_new()) {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    md_ = EVP_MD_fetch(nullptr, "SHA256", nullptr);
#else
    md_ = EVP_sha256();
#endif
    if (!ctx_ || !md_) {
      release();
      fail("OpenSSL: cannot set up SHA-256 for a Merkle tree");
    }
  }
  ~TreeHasher() { release(); }
  TreeHasher(const TreeHasher&) = delete;
  TreeHasher& operator=(const TreeHasher&) = delete;

  Digest leaf(const Digest& x) {
    uint8_t msg[33];
    msg[0] = 0x00;
    std::memcpy(msg + 1, x.data(), 32);
    return hash(msg, sizeof msg);
  }
  Digest node(const Digest& left, const Digest& right) {
    uint8_t msg[65];
    msg[0] = 0x01;
    std::memcpy(msg + 1, left.data(), 32);
    std::memcpy(msg + 33, right.data(), 32);
    return hash(msg, sizeof msg);
  }

 private:
  Digest hash(const uint8_t* msg, size_t n) {
    Digest d{};
    unsigned int len = 0;
    if (EVP_DigestInit_ex(ctx_, md_, nullptr) != 1 || EVP_DigestUpdate(ctx_, msg, n) != 1 ||
        EVP_DigestFinal_ex(ctx_, d.data(), &len) != 1 || len != d.size())
      fail("OpenSSL: SHA-256 failed while hashing a Merkle tree");
    return d;
  }
  void release() {
    EVP_MD_CTX_free(ctx_);
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    EVP_MD_free(md_);
#endif
  }

  EVP_MD_CTX* ctx_;
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  EVP_MD* md_ = nullptr;
#else
  const EVP_MD* md_ = nullptr;
#endif
};

// Replaces a level of node hashes by the level above it, in place.
void merkle_level_up(TreeHasher& hasher, std::vector<Digest>& level) {
  size_t n = level.size();
  for (size_t i = 0; i + 1 < n; i += 2) level[i / 2] = hasher.node(level[i], level[i + 1]);
  if (n % 2) level[n / 2] = level[n - 1];
  level.resize((n + 1) / 2);
}

std::vector<Digest> merkle_leaves(TreeHasher& hasher, const std::vector<Digest>& leaves_x) {
  std::vector<Digest> level;
  level.reserve(leaves_x.size());
  for (const Digest& x : leaves_x) level.push_back(hasher.leaf(x));
  return level;
}

}  // namespace

Digest merkle_leaf_hash(const Digest& x) { return TreeHasher().leaf(x); }

Digest merkle_node_hash(const Digest& left, const Digest& right) {
  return TreeHasher().node(left, right);
}

Digest merkle_root(const std::vector<Digest>& leaves_x) {
  if (leaves_x.empty()) return sha256("");
  TreeHasher hasher;
  std::vector<Digest> level = merkle_leaves(hasher, leaves_x);
  while (level.size() > 1) merkle_level_up(hasher, level);
  return level[0];
}

std::vector<Digest> merkle_inclusion_proof(const std::vector<Digest>& leaves_x, size_t index) {
  if (index >= leaves_x.size())
    fail("Merkle inclusion proof: leaf {} does not exist in a tree of {} leaves", index,
         leaves_x.size());
  TreeHasher hasher;
  std::vector<Digest> level = merkle_leaves(hasher, leaves_x);
  std::vector<Digest> proof;
  // A node without a sibling (the odd last one) is carried up and contributes nothing.
  for (size_t i = index; level.size() > 1; i /= 2) {
    size_t sibling = i ^ 1;
    if (sibling < level.size()) proof.push_back(level[sibling]);
    merkle_level_up(hasher, level);
  }
  return proof;
}

MerkleTree::MerkleTree(const std::vector<Digest>& leaves_x) {
  if (leaves_x.empty()) return;
  TreeHasher hasher;
  levels_.push_back(merkle_leaves(hasher, leaves_x));
  while (levels_.back().size() > 1) {
    std::vector<Digest> up = levels_.back();
    merkle_level_up(hasher, up);
    levels_.push_back(std::move(up));
  }
}

Digest MerkleTree::root() const { return levels_.empty() ? sha256("") : levels_.back()[0]; }

std::vector<Digest> MerkleTree::inclusion_proof(size_t index) const {
  if (index >= size())
    fail("Merkle inclusion proof: leaf {} does not exist in a tree of {} leaves", index, size());
  std::vector<Digest> proof;
  for (size_t l = 0, i = index; l + 1 < levels_.size(); ++l, i /= 2)
    if ((i ^ 1) < levels_[l].size()) proof.push_back(levels_[l][i ^ 1]);
  return proof;
}

bool merkle_verify_inclusion(const Digest& x, size_t index, size_t tree_size,
                             const std::vector<Digest>& proof, const Digest& root) {
  if (index >= tree_size) return false;
  try {
    TreeHasher hasher;
    // RFC 9162 2.1.3.2: fn walks the leaf's index up the tree, sn the last index of the level.
    size_t fn = index, sn = tree_size - 1;
    Digest r = hasher.leaf(x);
    for (const Digest& p : proof) {
      if (sn == 0) return false;
      if ((fn & 1) || fn == sn) {
        r = hasher.node(p, r);
        while (!(fn & 1) && fn != 0) fn >>= 1, sn >>= 1;
      } else {
        r = hasher.node(r, p);
      }
      fn >>= 1;
      sn >>= 1;
    }
    return sn == 0 && r == root;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace wit
