// GPT-2 architecture on libtorch tensors: pre-LayerNorm blocks, learned positions, tanh-GELU
// MLP, causal self-attention, lm head tied to the token embedding, as per-unit pieces. Rank-blind:
// the layouts (trainer/layout.h) hold the parameters and the one step (trainer/step.h) composes
// the pieces.
//
// All parameters live in one flat fp32 vector (canonical order = gpt_param_specs); a unit's
// tensors are views into its range. Optimizers, checkpoints, fingerprints and sharding work on
// the flat vector, so "parameter i" means the same thing everywhere.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/model_config.h"

namespace wit::model {


// One parameter tensor: its Hugging Face GPT-2 name, shape as stored here (torch Linear
// convention, out x in), place in the flat buffer, and whether weight decay applies.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t numel = 0;
  bool decay = false;          // matmul weights and embeddings decay; biases and norms do not
  bool hf_transposed = false;  // Hugging Face stores this weight as Conv1D (in x out)
};

std::vector<ParamSpec> gpt_param_specs(const GPTConfig& cfg);
int64_t gpt_param_count(const GPTConfig& cfg);
// Training FLOPs per token: 6N for the matmuls plus 12·L·T·d for attention (PaLM appendix B).
double gpt_flops_per_token(const GPTConfig& cfg, int64_t seq_len);

// The parameter ranges sharded training gathers one at a time: 0 = embeddings (wte, wpe),
// 1..L = transformer blocks, L+1 = final norm. Each is contiguous in the flat buffer.
struct Unit {
  int64_t begin = 0, end = 0;            // flat range
  size_t first_spec = 0, last_spec = 0;  // specs [first, last)
};
std::vector<Unit> gpt_units(const GPTConfig& cfg);
// The unit's tensors as views of `buffer`, which holds the unit's range from its start.
std::vector<torch::Tensor> unit_tensors(const std::vector<ParamSpec>& specs, const Unit& u,
                                        const torch::Tensor& buffer);

// GPT-2 initialisation: N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), zero biases,
// unit norms, drawn tensor by tensor in canonical order from one generator seeded with `seed`.
// Keeps the elements [lo, lo + out.numel()) of the flat vector in `out`: every rank of any
// layout draws the whole sequence and keeps its part.
void init_params(const GPTConfig& cfg, uint64_t seed, int64_t lo, torch::Tensor& out);

// Dropout with an explicit generator: the masks are a function of the micro-batch's seed.
struct Dropout {
  double p = 0.0;
  bool train = false;
  std::optional<torch::Generator> gen;
  torch::Tensor operator()(const torch::Tensor& x);
};

struct Loss {
  torch::Tensor objective;     // 0-dim, for backward()
  torch::Tensor token_losses;  // (n,) fp32, detached, on the logits' device
};
// The loss's value: the mean of n fp32 token losses read back to the host, summed in index order
// in double, so it is independent of thread count and device. The step reads every
// micro-batch's token losses at once, after the last one (trainer/step.cpp).
float mean_in_order(const float* losses, int64_t n);

// The forward pass in pieces, called unit by unit by the one step and the one forward.
torch::Tensor gpt_embed(const GPTConfig& cfg, const torch::Tensor& wte, const torch::Tensor& wpe,
                        const torch::Tensor& idx, Dropout& dropout);  // (B,T,C)
// p: the block's 12 tensors in spec order; x: (B,T,C)
// Those of p that only its matmuls read (torch::linear's weights and biases): bf16 autocast casts
// them to bf16, so a bf16 copy may be passed in their place, with the same result. With
// model.gelu = fused the MLP's first bias is read by the fused kernel, in fp32, instead.
std::vector<size_t> block_matmul_params(const GPTConfig& cfg);
torch::Tensor gpt_block(const GPTConfig& cfg, const torch::Tensor& x,
                        const std::vector<torch::Tensor>& p, const torch::Tensor& causal_mask,
                        Dropout& dropout);
// wte: the head's matmul weight (the same may be a bf16 copy under bf16 autocast).
torch::Tensor gpt_head_logits(const GPTConfig& cfg, const torch::Tensor& x,
                              const torch::Tensor& lnf_w, const torch::Tensor& lnf_b,
                              const torch::Tensor& wte);  // (B,T,V)
Loss cross_entropy_mean(const torch::Tensor& logits, const torch::Tensor& targets);
// (context, context) bool, true above the diagonal
inline torch::Tensor causal_mask(int64_t context) {
  return torch::ones({context, context}, torch::kBool).triu(1);
}



}  // namespace wit::model
