// `wit sample`: text from a trained run's model (model.safetensors or a checkpoint), through the
// tokenizer its data was prepared with.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace wit::cli {

struct SampleCliOptions {
  std::filesystem::path run;
  std::filesystem::path checkpoint;  // a checkpoint file, or a step number; empty: the model
  std::string prompt;
  int64_t tokens = 256;
  double temperature = 1.0;
  int64_t top_k = 0;
  uint64_t seed = 1;
  std::string tokenizer;  // byte|gpt2; empty: the run's dataset manifest says
  std::filesystem::path vocab;
  bool stats = false;
  std::filesystem::path logits;  // writes the prompt's ids, its next-token logits and the ids drawn
};

int sample(const SampleCliOptions& o);

}  // namespace wit::cli
