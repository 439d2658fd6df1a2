// A multiple-choice evaluation set in HellaSwag's file format, tokenized with a dataset's own
// tokenizer. The file is JSON lines, one example per line: "ctx" (the context), "endings" (2 to
// 16 candidate continuations) and "label" (the index of the right one); other fields (HellaSwag's
// ind, activity_label, ctx_a, ctx_b, split, source_id) are ignored. Each candidate is scored as
// HellaSwag usually is: the context's tokens followed by the tokens of " " + the ending.
//
//   ChoiceSet set = load_choice_set("hellaswag_val.jsonl", dataset.manifest(), cfg.context);
//   set.sha256;  // of the file's bytes: what a run commits to (train.choice_eval_sha256)
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "trainer/data/manifest.h"

namespace wit::data {

struct ChoiceExample {
  std::vector<uint16_t> context;               // at least one token
  std::vector<std::vector<uint16_t>> endings;  // each at least one token
  int64_t label = 0;                           // index into endings
};

struct ChoiceSet {
  std::vector<ChoiceExample> examples;
  Digest sha256{};  // of the file's bytes
};

// Reads and tokenizes `file` with the tokenizer that made `manifest`'s dataset (byte, or gpt2
// from the default vocabulary, which must be the one the manifest records). An example whose
// context and longest ending exceed `context` + 1 tokens keeps the end of its context (every
// ending sees the same context). Throws an Error naming the file and line of a bad example.
// With `sha256_hex`, a file of other bytes is refused before a byte of it is parsed: a path
// that a run directory names (unsigned) may point anywhere on the reader's machine.
ChoiceSet load_choice_set(const std::filesystem::path& file, const Manifest& manifest,
                          int64_t context, const std::string& sha256_hex = "");

// Files over this size are refused unread (HellaSwag's validation set is about 11 MB).
constexpr uint64_t kMaxChoiceFileBytes = uint64_t(1) << 30;

}  // namespace wit::data
