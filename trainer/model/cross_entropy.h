// The fused cross-entropy (model.cross_entropy = fused): one pass over the logits forward and one
// backward, in the logits' own dtype (fp32 or bf16) with fp32 arithmetic. The ATen form
// (cross_entropy_mean in gpt.h) under bf16 autocast makes an fp32 copy of the logits, a
// log-softmax of them, a zero-filled gradient and its cast back: 6.7 times the operand bytes
// (docs/gpu.md, "The fused cross-entropy"). Same loss to rounding; the arithmetic
// is cross_entropy_rows.h's, run by CUDA kernels on a GPU and by the same lanes in a loop on the
// CPU.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "trainer/model/gpt.h"

namespace wit::model {

// The version of the kernels' arithmetic (cross_entropy_rows.h: the lanes, the tree, the
// formulas), recorded beside their compiler (kernels.h): a change to it is a new version, so a run
// made with another one is refused an exact replay rather than reported as a lie.
constexpr const char* kFusedCrossEntropyArithmetic = "wit-cross-entropy-v1";

// The mean cross-entropy of logits (..., V) against targets (...), as cross_entropy_mean; its
// gradient flows to the logits in their dtype.
Loss fused_cross_entropy_mean(const torch::Tensor& logits, const torch::Tensor& targets);

// A micro-batch's training loss by the run's model.cross_entropy: cross_entropy_mean for "ops",
// fused_cross_entropy_mean for "fused".
Loss training_loss(const GPTConfig& cfg, const torch::Tensor& logits, const torch::Tensor& targets);

// The pieces, for tests: each row's loss and log-sum-exp (fp32) of logits (rows, V), and the
// logits' gradient for the rows' upstream gradients `grad` (rows,), fp32.
std::pair<torch::Tensor, torch::Tensor> fused_cross_entropy_rows(const torch::Tensor& logits,
                                                                 const torch::Tensor& targets);
torch::Tensor fused_cross_entropy_grad(const torch::Tensor& logits, const torch::Tensor& targets,
                                       const torch::Tensor& lse, const torch::Tensor& grad);

}  // namespace wit::model
