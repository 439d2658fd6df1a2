// The training step as a pure function of its committed inputs:
//   step(θ_t, opt_t, batch_t, rng_t, hp_t) -> (θ_t+1, opt_t+1)
// The trainer calls it to train; a verifier calls the same function to replay. There is one
// step for every layout (trainer/layout.h): it runs each micro-batch unit by unit (embeddings,
// blocks, final norm), and the layout decides where a unit's parameters come from and where
// its gradient goes.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/sha256.h"
#include "trainer/batch.h"
#include "trainer/layout.h"
#include "trainer/optim/adamw.h"
#include "record/run_config.h"
#include "record/format.h"
#include "record/sketch.h"

namespace wit {

// What one step did: every field is a deterministic function of the step's inputs.
struct StepRecord {
  int64_t step = 0;         // index of the step (0-based)
  int64_t tokens = 0;       // tokens consumed by this step
  float loss = 0;           // mean over the M micro-batches, summed in the canonical tree
  float grad_norm = 0;      // global L2 norm before clipping
  float clip_factor = 1;    // factor applied to the gradient (1: not clipped)
  optim::Hyper hyper{};     // hyperparameters applied
  Digest batch_hash{};      // over the ordered micro-batches' token bytes (record/format.h)
  Digest rng_commitment{};  // over the micro-batches' generator seeds
  witness::Fingerprint weight_fingerprint{};  // sketch of the parameters after the update
};

// Seed of micro-batch `micro`'s generator at `step`: H(run_seed, step, micro), never the rank.
uint64_t micro_batch_seed(uint64_t run_seed, int64_t step, int64_t micro);

// Seed of the weight initialisation: H(run_seed).
uint64_t init_seed(uint64_t run_seed);

// Everything a step reads besides the state: built by make_step_context from a resolved run.
struct StepContext {
  const BatchSource* data = nullptr;
  optim::AdamWConfig optim;
  int64_t total_steps = 0;
  uint64_t run_seed = 0;
  // Record the witness facts (batch hash, RNG commitment, weight fingerprint). Always on in
  // training; off only where a benchmark measures what witnessing costs.
  bool witness = true;
  // false: gradients summed over ranks in arrival order (dist.reduction = arrival).
  bool canonical_reduction = true;
};
StepContext make_step_context(const RunConfig& rc, const BatchSource& batches);

// What one rank attests about the micro-batches it computed.
struct MicroBatchWitness {
  int64_t index = 0;
  Digest tokens_hash{};  // witness::micro_batch_hash of its tokens
  uint64_t seed = 0;     // its generator's seed
};

// Micro-batch `micro` of `step` as tensors on `device`, with a generator there seeded
// H(run_seed, step, micro); when witnessing, its facts are added to `witnessed`.
struct PreparedMicroBatch {
  MicroBatch batch;
  torch::Generator gen;
};
PreparedMicroBatch prepare_micro_batch(const StepContext& ctx, int64_t step, int64_t micro,
                                       std::vector<MicroBatchWitness>& witnessed,
                                       const torch::Device& device = torch::kCPU);

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

std::vector<optim::DecaySegment> decay_segments_of(const std::vector<model::ParamSpec>& specs);

// The parts of a step the record needs first: step, tokens, applied hyperparameters.
StepRecord begin_step(const BatchSource& data, int64_t step, const StepContext& ctx);

// A step's inputs as the committed schedule gives them, without training: begin_step's fields
// and the batch hash and RNG commitment over all M micro-batches (what the verifier's data
// stage compares with every logged step).
StepRecord committed_inputs(const StepContext& ctx, int64_t step);

// Runs step `steps_done()`: this rank's micro-batches forward/backward unit by unit, gradients
// summed in the canonical tree (locally, then over ranks) and averaged, clipped by the global
// norm, AdamW update of the local parameters and moments; the step count advances by one.
StepRecord train_step(Layout& layout, const StepContext& ctx);

// The mean of each tensor of token losses (model::mean_in_order), with one copy to the host for
// all of them: a step's micro-batches, an evaluation's batches (on a GPU, one wait).
std::vector<double> loss_values(const std::vector<torch::Tensor>& token_losses);

// Logits (B, T, V) without dropout or gradients (collective where the layout gathers).
torch::Tensor forward_logits(Layout& layout, const torch::Tensor& idx);

}  // namespace wit
