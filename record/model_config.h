// The GPT's shape: what a config names and a checkpoint's parameter count follows from. No torch,
// so that config parsing and the witness log's readers build without it.
#pragma once

#include <cstdint>
#include <string>

namespace wit::model {

struct GPTConfig {
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 256;
  int64_t vocab_size = 257;
  int64_t context = 256;  // maximum sequence length (learned position table size)
  double dropout = 0.0;
  // "math": softmax(QK^T/sqrt(d))V written out; "flash": scaled-dot-product attention's flash
  // kernel (libtorch 2.x, CUDA). Resolved before training (never "auto" here).
  std::string attention = "math";
  // The training loss's kernels: "ops" (log-softmax and NLL as ATen operations) or "fused"
  // (trainer/model/cross_entropy.h; CUDA only).
  std::string cross_entropy = "ops";
  // The layer norms' kernels: "ops" (torch::layer_norm) or "fused" (trainer/model/layer_norm.h;
  // CUDA only).
  std::string layer_norm = "ops";
  // The MLP's bias add and GELU: "ops" (torch::linear with the bias, then torch::gelu) or "fused"
  // (trainer/model/bias_gelu.h; CUDA only).
  std::string gelu = "ops";
};

}  // namespace wit::model
