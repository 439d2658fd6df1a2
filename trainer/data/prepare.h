// `wit prepare`: turns a corpus into a prepared data dir: llm.c token shards (train_000000.bin,
// val_000000.bin, ...) and, written last, manifest.h5. A dir is complete iff it has a manifest.
//
// Text inputs (text, dir, jsonl, kjv) use the byte tokenizer (each document contributes [EOT] +
// its canonical bytes, trainer/data/corpus.h) or GPT-2's ([50256] + its GPT-2 tokens), whole, to
// one shard of its split
// (trainer/data/split.h); a shard is closed when the next document would take it past
// shard_tokens (a longer document gets a shard of its own). Document ids follow input order.
//
// llmc input: existing llm.c shards made elsewhere (e.g. GPT-2-tokenized FineWeb), one .bin file
// or a directory of them (not recursive, in name order). Shards whose file name contains "val"
// are the val split, the others train; tokenizer "external", vocab 50257, EOT 50256. They are
// hard-linked into the output (copied if the output is on another filesystem): editing an
// original in place later also edits the prepared copy, which verify_shard_hashes detects.
// Documents are the EOT-delimited spans of each split's token stream: one starts at every EOT
// token (and at the very first token of the split if that is not EOT). Their canonical bytes
// are the span's tokens as little-endian uint16, EOT included. llm.c cuts shards at a fixed
// token count, so a span may run past the end of its shard: it belongs to the shard it starts
// in, and its length runs on into the next shard of the split.
//
//   PrepareOptions o;
//   o.out = "data/kjv";
//   PrepareReport r = prepare(o, [](const std::string& line) { fmt::print("{}\n", line); });
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/sha256.h"

namespace wit::data {

namespace fs = std::filesystem;

struct PrepareOptions {
  fs::path input;                   // empty = built-in KJV
  std::string format = "auto";      // auto|text|dir|jsonl|kjv|llmc (corpus.h: resolve_format)
  std::string text_field = "text";  // JSONL field holding the text
  fs::path out;
  double val_fraction = 0.05;  // [0, 1); ignored for llmc, whose split comes from file names
  uint64_t seed = 1337;        // split seed
  uint64_t shard_tokens = 100'000'000;  // 1 .. 2^31 - 1
  bool force = false;                   // replace an already prepared `out`
  std::string tokenizer = "byte";       // text inputs: byte|gpt2 (gpt2_tokenizer.h)
  fs::path vocab;                       // gpt2: the vocabulary dir (empty: gpt2_vocab_dir's default)
};

struct PrepareReport {
  std::string format;  // the resolved input format
  size_t documents = 0, train_documents = 0, val_documents = 0, skipped_empty = 0;
  uint64_t train_tokens = 0, val_tokens = 0;
  std::vector<fs::path> shards;  // in `out`, in manifest order (train first)
  Digest root{};
};

// Builds everything in a sibling temporary dir `out.tmp-PID` and only then swaps it into place
// (old dir renamed aside, new one renamed in, old one deleted), so a failure never leaves a
// manifest pointing at missing shards and never destroys a previously prepared dir. Refuses:
// an already prepared `out` without force, an `out` holding other files, an output inside the
// input or the reverse, and a corpus without documents.
PrepareReport prepare(const PrepareOptions& options,
                      const std::function<void(const std::string&)>& progress = {});

}  // namespace wit::data
