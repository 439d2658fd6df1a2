// The training step as a pure function of its committed inputs:
//   step(θ_t, opt_t, batch_t, rng_t, hp_t) -> (θ_t+1, opt_t+1)
// The trainer calls it to train; a verifier calls the same function to replay.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/sha256.h"
#include "trainer/batch.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/gpt.h"
#include "trainer/optim/adamw.h"
#include "witness/log/format.h"
#include "witness/log/sketch.h"

namespace wit {

// Parameters live in the model's flat buffer; the AdamW moments beside them, same layout.
struct OptimizerState {
  torch::Tensor m;   // (P,) fp32
  torch::Tensor v;   // (P,) fp32
  int64_t step = 0;  // steps completed; the next step has index `step`
  static OptimizerState zeros(int64_t num_params);
};

// What one step did: every field is a deterministic function of the step's inputs.
struct StepRecord {
  int64_t step = 0;         // index of the step (0-based)
  int64_t tokens = 0;       // tokens consumed by this step
  float loss = 0;           // mean over the M micro-batches, summed in the canonical tree
  float grad_norm = 0;      // global L2 norm before clipping
  float clip_factor = 1;    // factor applied to the gradient (1: not clipped)
  optim::Hyper hyper{};     // hyperparameters applied
  Digest batch_hash{};      // over the ordered micro-batches' token bytes (witness/log/format.h)
  Digest rng_commitment{};  // over the micro-batches' generator seeds
  witness::Fingerprint weight_fingerprint{};  // sketch of the parameters after the update
};

// Seed of micro-batch `micro`'s generator at `step`: H(run_seed, step, micro), never the rank.
uint64_t micro_batch_seed(uint64_t run_seed, int64_t step, int64_t micro);

// Seed of the weight initialisation: H(run_seed).
uint64_t init_seed(uint64_t run_seed);

struct StepContext {
  const BatchSource* data = nullptr;
  optim::AdamWConfig optim;
  int64_t total_steps = 0;
  uint64_t run_seed = 0;
  // The process group (nullptr: one process). Rank r computes micro-batches [r·M/N, (r+1)·M/N)
  // and the canonical reduction makes the result independent of N.
  dist::Communicator* comm = nullptr;
  // Record the witness facts (batch hash, RNG commitment, weight fingerprint). Always on in
  // training; off only where a benchmark measures what witnessing costs.
  bool witness = true;
  // false: gradients summed over ranks in arrival order (dist.reduction = arrival).
  bool canonical_reduction = true;
};

// What one rank attests about the micro-batches it computed.
struct MicroBatchWitness {
  int64_t index = 0;
  Digest tokens_hash{};  // witness::micro_batch_hash of its tokens
  uint64_t seed = 0;     // its generator's seed
};

// Micro-batch `micro` of `step` as tensors, with its generator seeded H(run_seed, step, micro);
// when witnessing, its facts are added to `witnessed`.
struct PreparedMicroBatch {
  MicroBatch batch;
  torch::Generator gen;
};
PreparedMicroBatch prepare_micro_batch(const StepContext& ctx, int64_t step, int64_t micro,
                                       std::vector<MicroBatchWitness>& witnessed);

// Completes a record's witness fields from every rank's facts (collective: one all-gather):
// the batch hash and RNG commitment over all M micro-batches in index order, and the weight
// fingerprint as the sum of the ranks' sketches of the parameters they hold.
void seal_record(StepRecord& rec, const std::vector<MicroBatchWitness>& mine,
                 const witness::WeightSketch& my_weights, int64_t micro_batches,
                 dist::Communicator& comm);

// The sum over ranks of each rank's sketch (collective).
witness::WeightSketch sum_sketches(const witness::WeightSketch& mine, dist::Communicator& comm);
// The slice of the flat parameters [P·r/N, P·(r+1)/N) a replicated rank sketches.
std::pair<int64_t, int64_t> sketch_slice(int64_t num_params, int rank, int world);

// Gradient buffers hold P rounded up to a multiple of the world size (zero padding), so they
// split into equal blocks for the reduce-scatter.
int64_t padded_size(int64_t num_params, int world);

// Reusable gradient buffers, so a step does not allocate P floats per micro-batch.
class GradientPool {
 public:
  explicit GradientPool(int64_t size) : n_(size) {}
  torch::Tensor take();  // zeroed (size,)
  void give(torch::Tensor t) { free_.push_back(std::move(t)); }

 private:
  int64_t n_;
  std::vector<torch::Tensor> free_;
};

std::vector<optim::DecaySegment> decay_segments_of(const std::vector<model::ParamSpec>& specs);
inline std::vector<optim::DecaySegment> decay_segments(const model::GPT& model) {
  return decay_segments_of(model.specs());
}

// The parts of a step every layout shares. begin_step: the record's inputs — step, tokens,
// applied hyperparameters.
StepRecord begin_step(const BatchSource& data, int64_t step, const StepContext& ctx);
// finish_step: clip the (averaged) gradient g of n local elements by the global norm, AdamW
// update of the local parameters and moments, advance the step.
void finish_step(StepRecord& rec, double grad_norm, float* g, int64_t n, float* params,
                 OptimizerState& opt, const std::vector<optim::DecaySegment>& segments);

// Runs step `opt.step`: M micro-batches forward/backward (this rank's block of them), gradients
// summed in the canonical tree (locally, then over ranks) and averaged, clipped, AdamW update in
// place on every rank; opt.step advances by one. The pool's buffers must be padded_size long.
StepRecord train_step(model::GPT& model, OptimizerState& opt, const StepContext& ctx,
                      GradientPool& pool);

// The behavioural fingerprint from the model's logits (S, T, V) on the probe batch with targets
// y (S, T): per sequence the mean log-probability of its targets (summed in a fixed order),
// and the digest of the argmax tokens.
witness::ProbeFields probe_outputs(const torch::Tensor& logits, const torch::Tensor& y,
                                   int64_t steps_done);

// Mean loss over `batches` validation micro-batches (no dropout, no gradients).
float evaluate(model::GPT& model, const data::TokenStream& val, int64_t seq_len,
               int64_t micro_batch_size, int64_t batches);

}  // namespace wit
