// AdamW with decoupled weight decay, a learning-rate schedule (cosine, linear or
// warmup-stable-decay) after a linear warmup, and
// global-norm gradient clipping, over flat fp32 buffers.
//
// Every operation is elementwise or a reduction in a fixed order, written out here rather than
// left to a library, so the result is the same bits for any thread count and any split of the
// buffer (the property that later lets a sharded optimizer match an unsharded one).
#pragma once

#include <cstdint>
#include <vector>

#include "record/optim_config.h"
#include "trainer/optim/adamw_element.h"

namespace wit::optim {

// The hyperparameters a step actually applies: recorded per step by the witness.
struct Hyper {
  float lr;
  float weight_decay;
  float beta1;
  float beta2;
  float eps;
  float grad_clip;
};

// Step `step` (0-based) of `total_steps`: linear warmup to lr over warmup_steps, then the
// schedule's decay, reaching min_lr at the last step.
Hyper hyper_at(const AdamWConfig& cfg, int64_t step, int64_t total_steps);

// Global L2 norm: squares summed in double within fixed chunks of kNormChunk elements, chunk
// partials then summed in chunk order.
constexpr int64_t kNormChunk = 1 << 16;
double grad_norm(const float* g, int64_t n);
// The chunk partials alone (n need not be a multiple of the chunk): a shard that starts on a
// chunk boundary computes its own, and the partials of all shards, summed in chunk order, give
// grad_norm's total. Trailing zero padding adds exact zeros.
std::vector<double> grad_norm_partials(const float* g, int64_t n);
double norm_from_partials(const std::vector<double>& partials);

// If clipping is on and norm > clip: g *= clip / (norm + 1e-6). Returns the factor applied (1 if
// none).
float clip_grads(float* g, int64_t n, double norm, float clip);

// Which elements of the flat buffer receive weight decay (matmul weights and embeddings).
struct DecaySegment {
  int64_t begin = 0, end = 0;
  bool decay = false;
};

// One AdamW update of n elements at optimizer step t (1-based), in place:
//   m = b1·m + (1−b1)·g;  v = b2·v + (1−b2)·g²
//   p = p·(1 − lr·wd) [decayed elements only];  p = p − (lr/bc1)·m / (sqrt(v)/sqrt(bc2) + eps)
// with bc_i = 1 − b_i^t computed in double by exact repeated squaring.
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n,
                  const std::vector<DecaySegment>& segments, int64_t t, const Hyper& h);

// The version of the arithmetic the fused kernels share with the loops above (adamw_element.h:
// the gradient norm's chunk partials and the AdamW update), among a GPU session's facts when a
// run uses them (optim.kernels = fused).
constexpr const char* kFusedOptimizerArithmetic = "wit-optimizer-v1";

// The fp32 scalars of that update at step t (adamw_element.h), shared by every implementation
// of it.
AdamWScalars adamw_scalars(const Hyper& h, int64_t t);

}  // namespace wit::optim
