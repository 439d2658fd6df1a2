// The fused layer norm (model.layer_norm = fused): one pass over the fp32 residual stream that
// writes the normalised rows in the precision the matmul after it reads (bf16 under bf16
// autocast), and one pass back from the matmul's bf16 gradient. ATen's form (torch::layer_norm)
// under bf16 autocast writes fp32 rows that autocast then casts to bf16, and its backward takes
// an fp32 copy of the bf16 gradient (docs/gpu.md, "The fused layer norm"). Same values to rounding;
// the arithmetic is layer_norm_rows.h's, run by CUDA kernels on a GPU and by the same lanes in a
// loop on the CPU, with the same bits on both (a NaN's encoding aside).
#pragma once

#include <torch/torch.h>

#include <utility>

#include "trainer/model/gpt.h"

namespace wit::model {

// The version of the arithmetic (layer_norm_rows.h: the lanes, the tree, the chunks, the
// formulas): a run that uses the kernels records it, and a change to it is a new version.
constexpr const char* kFusedLayerNormArithmetic = "wit-layer-norm-v1";

// GPT-2's layer norm (eps 1e-5) over the last dimension of fp32 x, with weight and bias (C,),
// written in `out` (fp32 or bf16); differentiable in x, weight and bias.
torch::Tensor fused_layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, torch::ScalarType out);

// The model's layer norm by model.layer_norm: torch::layer_norm for "ops"; fused_layer_norm for
// "fused", in bf16 where bf16 autocast is on for x's device (what the next matmul reads), else
// in x's type.
torch::Tensor layer_norm(const GPTConfig& cfg, const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias);

// sum = residual + branch (fp32 + the branch, fp32 or bf16, widened as libtorch's add widens it)
// and its layer norm in one pass each way: a block's attention residual and its MLP's layer norm.
// Returns (sum, the normalised rows in `out`), differentiable in all four, with the bits of the
// add followed by fused_layer_norm (autograd's sum of the sum's two gradients included; a NaN's
// encoding aside).
std::pair<torch::Tensor, torch::Tensor> fused_add_layer_norm(const torch::Tensor& residual,
                                                             const torch::Tensor& branch,
                                                             const torch::Tensor& weight,
                                                             const torch::Tensor& bias,
                                                             torch::ScalarType out);

// The same by model.layer_norm: residual + branch, then layer_norm, for "ops";
// fused_add_layer_norm in layer_norm's output type for "fused".
std::pair<torch::Tensor, torch::Tensor> add_layer_norm(const GPTConfig& cfg,
                                                       const torch::Tensor& residual,
                                                       const torch::Tensor& branch,
                                                       const torch::Tensor& weight,
                                                       const torch::Tensor& bias);

// The pieces, for tests: rows (rows, C) normalised into `out`, with each row's mean and 1/std
// (fp32); and the gradients for the rows' upstream gradient dy (rows, C; fp32 or bf16).
// With the residual add, `sum` too; and in the backward, the sum's gradient from after the block
// (`upstream`, fp32) added into dx, which is then the residual's gradient, and the branch's in its
// type (`dbranch`: dx itself for an fp32 branch).
struct LayerNormRows {
  torch::Tensor y, mean, rstd, sum;
};
LayerNormRows fused_layer_norm_rows(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias, torch::ScalarType out);
LayerNormRows fused_add_layer_norm_rows(const torch::Tensor& residual, const torch::Tensor& branch,
                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                        torch::ScalarType out);
struct LayerNormGrads {
  torch::Tensor dx, dweight, dbias, dbranch;
};
LayerNormGrads fused_layer_norm_grads(const torch::Tensor& dy, const torch::Tensor& x,
                                      const torch::Tensor& weight, const torch::Tensor& mean,
                                      const torch::Tensor& rstd);
LayerNormGrads fused_add_layer_norm_grads(const torch::Tensor& dy, const torch::Tensor& upstream,
                                          const torch::Tensor& sum, const torch::Tensor& weight,
                                          const torch::Tensor& mean, const torch::Tensor& rstd,
                                          torch::ScalarType branch);

}  // namespace wit::model
