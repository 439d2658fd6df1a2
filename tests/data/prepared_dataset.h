// What every dataset `wit prepare` writes must satisfy, checked from its files: for the
// prepare tests of text inputs and of llm.c shards.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "trainer/data/dataset.h"
#include "trainer/data/prepare.h"
#include "trainer/data/shard.h"
#include "trainer/data/split.h"
#include "trainer/data/tokenizer.h"

namespace wit::data {

// Every document's text, decoded from the shards through the manifest's offsets and lengths.
inline std::vector<std::string> documents_from_shards(const Dataset& data) {
  std::vector<std::string> out;
  for (const DocumentEntry& d : data.manifest().documents) {
    std::vector<uint16_t> tokens(d.length);
    data.split(d.split).read(data.stream_offset(d), d.length, tokens.data());
    EXPECT_EQ(tokens[0], kByteEot) << "document " << d.id;
    out.push_back(decode_bytes(tokens.data(), tokens.size()));
  }
  return out;
}

// Checks what every prepared dir must satisfy: shards agree with the manifest, documents tile
// their split's stream, hashes are of the decoded text.
inline void check_consistent(const fs::path& out, const PrepareReport& report) {
  Dataset data = Dataset::open(out);
  const Manifest& m = data.manifest();
  EXPECT_EQ(m.root, report.root);
  EXPECT_EQ(m.documents.size(), report.documents);
  EXPECT_EQ(data.train().size(), report.train_tokens);
  EXPECT_EQ(data.val().size(), report.val_tokens);
  uint64_t lengths[2] = {0, 0};
  for (const DocumentEntry& d : m.documents) lengths[d.split] += d.length;
  EXPECT_EQ(lengths[kSplitTrain], report.train_tokens);
  EXPECT_EQ(lengths[kSplitVal], report.val_tokens);
  ASSERT_EQ(report.shards.size(), m.shards.size());
  for (size_t i = 0; i < m.shards.size(); ++i) {
    EXPECT_EQ(report.shards[i], out / m.shards[i].file);
    EXPECT_EQ(Shard(out / m.shards[i].file).size(), m.shards[i].tokens);
  }
  data.verify_shard_hashes();
  if (m.tokenizer == "byte") {
    std::vector<std::string> texts = documents_from_shards(data);
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(sha256(texts[i]), m.documents[i].sha256) << "document " << i;
      EXPECT_EQ(m.documents[i].length, texts[i].size() + 1);
      // Byte-level documents never straddle shards.
      EXPECT_LE(m.documents[i].offset + m.documents[i].length,
                m.shards[m.documents[i].shard].tokens);
    }
  }
  EXPECT_FALSE(fs::exists(out.string() + ".tmp-" + std::to_string(::getpid())));
}

}  // namespace wit::data
