// FSDP-style (ZeRO-3) training: parameters, gradients and AdamW state are split over the ranks
// in contiguous shards of the flat buffer; a unit's parameters (embeddings, one block, the final
// norm) are all-gathered just in time, used, and freed. The step gives the same bits as the
// unsharded step (trainer/step.h) at any world size.
//
// How the canonical tree survives sharding: in round j rank r computes micro-batch j·N + r, and
// each unit's gradient is reduce-scattered over ranks in the canonical tree right after its
// backward, so round j yields the sum of micro-batches jN..jN+N−1 (an aligned subtree); each
// rank then sums the rounds of its shard in the canonical tree. With M a power of two this is
// exactly the tree of the unsharded step. The backward recomputes each unit's forward from its
// saved input (the dropout generator is rewound to the unit's start), which keeps one unit's
// parameters, gradients and graph in memory at a time.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "trainer/dist/communicator.h"
#include "trainer/model/gpt.h"
#include "trainer/step.h"

namespace wit {

// Rank r owns [r·S, (r+1)·S) of the flat buffer zero-padded to N·S; S is a multiple of the
// gradient-norm chunk, so every norm chunk lies in one shard.
struct ShardLayout {
  int64_t num_params = 0, shard_size = 0, begin = 0;
  int world = 1, rank = 0;
  static ShardLayout make(int64_t num_params, int world, int rank);
  int64_t owned() const;  // real (non-padding) elements in this rank's shard
  // Per rank, how many elements of [lo, hi) its shard holds.
  std::vector<int64_t> counts(int64_t lo, int64_t hi) const;
};

class ShardedGPT {
 public:
  ShardedGPT(const model::GPTConfig& cfg, dist::Communicator& comm);
  // Same values as GPT::init_weights: every rank draws the full sequence, keeps its shard.
  void init_weights(uint64_t seed);
  const model::GPTConfig& config() const { return cfg_; }
  const ShardLayout& layout() const { return layout_; }
  int64_t num_params() const { return layout_.num_params; }
  torch::Tensor& params_shard() { return shard_; }  // (S,) fp32
  dist::Communicator& comm() { return comm_; }

  // The unit's full parameters, gathered from every rank's shard (collective).
  torch::Tensor gather_unit(size_t unit);
  // Reduce-scatters a unit's full gradient and adds this rank's part into `shard_acc` (S,).
  void reduce_unit_grad(size_t unit, torch::Tensor& unit_grad, torch::Tensor& shard_acc);
  // Logits (B, T, V) without dropout, the same bits as GPT::logits (collective).
  torch::Tensor logits(const torch::Tensor& idx);
  // Mean validation loss over the same batches as evaluate() (collective: every rank calls it).
  float evaluate(const data::TokenStream& val, int64_t seq_len, int64_t micro_batch_size,
                 int64_t batches);
  // All parameters, gathered (collective); for export at the end of a run.
  torch::Tensor gather_all();

  const std::vector<model::ParamSpec>& specs() const { return specs_; }
  const std::vector<model::Unit>& units() const { return units_; }
  const torch::Tensor& mask() const { return mask_; }

 private:
  model::GPTConfig cfg_;
  dist::Communicator& comm_;
  ShardLayout layout_;
  std::vector<model::ParamSpec> specs_;
  std::vector<model::Unit> units_;
  torch::Tensor shard_, mask_;
};

// The sharded step. `opt` holds shard-sized moments; the pool hands out shard-sized buffers.
StepRecord train_step_sharded(ShardedGPT& model, OptimizerState& opt, const StepContext& ctx,
                              GradientPool& pool);

}  // namespace wit
