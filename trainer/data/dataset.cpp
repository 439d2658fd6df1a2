// Opening a prepared data dir: manifest first, then every shard, checked against it.
#include "trainer/data/dataset.h"

#include "core/error.h"
#include "trainer/data/split.h"

namespace wit::data {

Dataset Dataset::open(const fs::path& dir) {
  fs::path manifest_path = dir / kManifestFile;
  std::error_code ec;
  if (!fs::exists(manifest_path, ec))
    fail("{} is not a prepared dataset (no {}); run wit prepare", dir.string(), kManifestFile);
  Dataset d;
  d.dir_ = dir;
  d.manifest_ = read_manifest(manifest_path);
  std::vector<Shard> shards[2];
  uint64_t split_tokens[2] = {0, 0};
  for (const ShardEntry& e : d.manifest_.shards) {
    Shard shard(dir / e.file);
    if (shard.size() != e.tokens)
      fail("{}: holds {} tokens but {} says {}", shard.path().string(), shard.size(),
           manifest_path.string(), e.tokens);
    d.shard_stream_offset_.push_back(split_tokens[e.split]);
    split_tokens[e.split] += e.tokens;
    shards[e.split].push_back(std::move(shard));
  }
  d.train_ = TokenStream(std::move(shards[kSplitTrain]));
  d.val_ = TokenStream(std::move(shards[kSplitVal]));
  return d;
}

const TokenStream& Dataset::split(uint8_t split) const {
  if (split == kSplitTrain) return train_;
  if (split == kSplitVal) return val_;
  fail("dataset {}: there is no split {}", dir_.string(), split);
}

uint64_t Dataset::stream_offset(const DocumentEntry& document) const {
  if (document.shard >= shard_stream_offset_.size())
    fail("dataset {}: document {} names shard {}, but there are {}", dir_.string(), document.id,
         document.shard, shard_stream_offset_.size());
  return shard_stream_offset_[document.shard] + document.offset;
}

void Dataset::verify_shard_hashes() const {
  for (const ShardEntry& e : manifest_.shards) {
    fs::path path = dir_ / e.file;
    Digest actual = sha256_file(path);
    if (actual != e.sha256)
      fail("{}: SHA-256 is {} but the manifest says {}: the shard changed after prepare",
           path.string(), to_hex(actual), to_hex(e.sha256));
  }
}

}  // namespace wit::data
