// Text generation from a trained GPT: a forward pass that keeps each block's keys and values
// (a KV cache, so a new token costs one position, not the whole context), temperature and
// top-k sampling from a generator of its own (never the training one), greedy at temperature
// 0. The same arithmetic as the training forward in eval mode (no dropout), one sequence.
//
//   Sampler s(cfg, full_params);               // (P,) fp32 flat parameters, canonical order
//   SampleOptions o;  o.tokens = 64;  o.seed = 1;
//   s.generate(prompt_ids, o, [](uint16_t t) { print(decode(t)); return true; });
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "trainer/model/gpt.h"

namespace wit {

struct SampleOptions {
  int64_t tokens = 64;       // new tokens at most
  double temperature = 1.0;  // 0: greedy (argmax); logits are divided by it otherwise
  int64_t top_k = 0;         // 0: the whole vocabulary
  uint64_t seed = 1;
  int64_t stop_token = -1;   // generation ends after emitting it (the end-of-text token)
  int64_t vocab = 0;         // draw only ids below this (the tokenizer's vocabulary); 0: the model's
};

// Checks the options against the model; throws an Error naming the first bad one.
void check_sample_options(const SampleOptions& o, const model::GPTConfig& cfg);

class Sampler {
 public:
  Sampler(const model::GPTConfig& cfg, torch::Tensor flat_params);

  // Feeds `prompt` (1 .. context tokens), then draws up to o.tokens tokens, handing each to
  // `emit` (which returns false to stop). Past the context, the cache restarts from the last
  // context/2 tokens. Returns the tokens drawn.
  std::vector<uint16_t> generate(const std::vector<uint16_t>& prompt, const SampleOptions& o,
                                 const std::function<bool(uint16_t)>& emit);

  // The logits (V, fp32) for the token after `prompt` (1 .. context tokens), from a fresh cache.
  torch::Tensor next_logits(const std::vector<uint16_t>& prompt);

 private:
  torch::Tensor feed(const std::vector<uint16_t>& tokens);  // logits (V) after the last one
  void reset() { k_.assign(k_.size(), {}), v_.assign(v_.size(), {}), length_ = 0; }

  model::GPTConfig cfg_;
  torch::Tensor params_;
  std::vector<model::ParamSpec> specs_;
  std::vector<model::Unit> units_;
  std::vector<torch::Tensor> k_, v_;  // per block: (1, heads, length, head_dim)
  int64_t length_ = 0;
};

}  // namespace wit
