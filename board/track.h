// Leaderboard tracks: what the entries of one ranking compete on, and whether a run may enter.
//
// A track fixes the dataset (its manifest root and data layout: documents, splits and tokens),
// the model family and a parameter budget, a training-token budget, and the evaluation whose
// final value ranks the entries (the val split's loss over a fixed set of sequences). The
// operator writes them in YAML (configs/board/tracks.yaml):
//
//   tracks:
//     - id: kjv-tiny
//       title: Tiny GPT on the King James Bible, byte tokens
//       dataset: {manifest_root: 18a5..., data_layout: 9c1e..., tokenizer: byte}
//       model: {family: gpt2, max_params: 4000000}
//       budget: {max_tokens: 2000000}
//       eval: {split: val, metric: loss, seq_len: 128, sequences: 64}
//
// A run may enter when its witness log committed to that dataset and layout, a model of the
// family within the budget, at most max_tokens training tokens, and an evaluation of exactly
// those sequences; every fact comes from the log's committed metadata, none from the submitter.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "record/reader.h"

namespace wit::board {

struct Track {
  std::string id;     // [a-z0-9-]+, unique in its file
  std::string title;  // for pages
  Digest manifest_root{};
  Digest data_layout{};
  std::string tokenizer;      // byte|gpt2|external: what the layout's tokens are
  std::string family = "gpt2";
  int64_t max_params = 0;     // > 0
  int64_t max_tokens = 0;     // > 0: steps x micro-batches x sequences x seq_len
  std::string split = "val";  // the only split a run evaluates
  std::string metric = "loss";
  int64_t eval_seq_len = 0;    // data.seq_len of the evaluation
  int64_t eval_sequences = 0;  // train.eval_batches x train.micro_batch_size
};

// Reads and checks a tracks file; an error names the file, the line and the problem.
std::vector<Track> load_tracks(const std::filesystem::path& file);

// A track as the board's API shows it (GET /api/tracks/ID), and back: a client checks a run
// against the board's own rules before it uploads anything.
nlohmann::json track_json(const Track& t);
Track track_from_json(const nlohmann::json& j);  // an Error names what is missing

// Why `meta` (a witness log's committed metadata) may not enter `track`: one line per broken
// rule, empty when it may.
std::vector<std::string> entry_problems(const Track& track, const witness::RunMeta& meta);

}  // namespace wit::board
