// The fused bias and GELU (model.gelu = fused): the MLP's first matmul runs without its bias, and
// one pass adds the bias and applies GPT-2's tanh GELU, writing the rows in the matmul's precision
// (bf16 under bf16 autocast); one pass back writes the rows' gradient and sums the bias's from
// the same values. ATen's form (torch::linear with the bias, then torch::gelu) reads the rows'
// gradient again for the bias's (docs/gpu.md, "The fused bias and GELU"). Same values to
// rounding; the arithmetic is bias_gelu_rows.h's, run by CUDA kernels on a GPU and in a loop on
// the CPU, with the same bits on both (a NaN's encoding aside).
#pragma once

#include <torch/torch.h>

#include "trainer/model/gpt.h"

namespace wit::model {

// The version of the arithmetic (bias_gelu_rows.h: e^x, the formulas, the chunks): a run that
// uses the kernels records it, and a change to it is a new version.
constexpr const char* kFusedGeluArithmetic = "wit-bias-gelu-v1";

// gelu(h + bias) over the last dimension of h (fp32 or bf16), with bias (C,) fp32, in h's type;
// differentiable in h and bias (the bias's gradient in fp32).
torch::Tensor fused_bias_gelu(const torch::Tensor& h, const torch::Tensor& bias);

// The MLP's first layer and its activation by model.gelu: gelu(linear(x, w, b)) for "ops";
// fused_bias_gelu(linear(x, w), b) for "fused" (b fp32).
torch::Tensor linear_gelu(const GPTConfig& cfg, const torch::Tensor& x, const torch::Tensor& w,
                          const torch::Tensor& b);

// The pieces, for tests: rows (rows, C) of h through the bias and GELU; and the gradients for the
// rows' upstream gradient dy (in h's type).
torch::Tensor fused_bias_gelu_rows(const torch::Tensor& h, const torch::Tensor& bias);
struct BiasGeluGrads {
  torch::Tensor dh, dbias;
};
BiasGeluGrads fused_bias_gelu_grads(const torch::Tensor& dy, const torch::Tensor& h,
                                    const torch::Tensor& bias);

}  // namespace wit::model
