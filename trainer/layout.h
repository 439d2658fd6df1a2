// How the training state is spread over the ranks, and what that means for a step. Two layouts,
// named as dist.mode names them:
//   ddp   every rank holds the whole state (one process is ddp at N = 1); a unit's parameters are
//         views of the rank's flat buffer, and a unit's gradient joins the rank's canonical sum,
//         summed over ranks bucket by bucket during the last micro-batch's backward;
//   fsdp  parameters, gradients and AdamW moments are split in contiguous shards (ZeRO-3); a
//         unit's parameters are gathered just in time, its gradient reduce-scattered to the
//         owners right after its backward, and the backward recomputes the unit's forward.
// The one training step (trainer/step.h) runs over either and gives the same bits. A layout's
// constructor checks every rule of its layout, so the trainer and the verifier refuse the same
// configurations with the same message.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainer/batch.h"
#include "trainer/checkpoint.h"
#include "trainer/compute.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/gpt.h"
#include "trainer/optim/adamw.h"
#include "record/format.h"
#include "record/sketch.h"

namespace wit {

// Parameters live in the layout's flat buffer (or shard); the AdamW moments beside them.
struct OptimizerState {
  torch::Tensor m;   // fp32, as long as the local parameters
  torch::Tensor v;   // fp32
  int64_t step = 0;  // steps completed; the next step has index `step`
  static OptimizerState zeros(int64_t n, const torch::TensorOptions& options = {});
};

// Reusable gradient buffers, so a step does not allocate a gradient per micro-batch.
class GradientPool {
 public:
  GradientPool(int64_t size, const torch::TensorOptions& options) : n_(size), options_(options) {}
  torch::Tensor take();  // zeroed (size,)
  void give(torch::Tensor t) { free_.push_back(std::move(t)); }

 private:
  int64_t n_;
  torch::TensorOptions options_;
  std::vector<torch::Tensor> free_;
};

class Layout {
 public:
  virtual ~Layout() = default;
  virtual std::string name() const = 0;  // "ddp" or "fsdp"
  const model::GPTConfig& config() const { return cfg_; }
  const std::vector<model::ParamSpec>& specs() const { return specs_; }
  const std::vector<model::Unit>& units() const { return units_; }
  const torch::Tensor& mask() const { return mask_; }
  int64_t num_params() const { return num_params_; }
  dist::Communicator& comm() { return comm_; }
  // The device, precision and attention kernel the state and the step use.
  const Compute& compute() const { return compute_; }
  // fp32 tensors on the compute's device.
  torch::TensorOptions options() const {
    return torch::TensorOptions().dtype(torch::kFloat32).device(compute_.device);
  }
  OptimizerState& optimizer() { return opt_; }
  int64_t steps_done() const { return opt_.step; }
  // Model state bytes this rank holds at rest (parameters, moments; gradients are transient).
  virtual int64_t state_bytes() const = 0;

  // --- State
  // GPT-2 initialisation from `seed` (every rank draws the full sequence, keeps its part).
  virtual void init(uint64_t seed) = 0;
  // Given initial weights instead (model.init_from): every rank holds the full vector (P,) on
  // the host and keeps its part; the optimizer starts at step 0 with zero moments.
  virtual void init_from(const torch::Tensor& params) = 0;
  // Every rank loads its part of a checkpoint written by any layout and world size; what it
  // loads is checked to be the state `expected` (the hash the caller checked the file as, or the
  // log committed), from the same open of the file, so a file replaced since is refused.
  virtual void load(const std::filesystem::path& checkpoint, const Digest& expected) = 0;
  // Collective: the whole state into one file, written by rank 0, which gets the state hash.
  virtual Digest save(const std::filesystem::path& file, const CheckpointInfo& info) = 0;
  // Collective: copies the whole state into `into` on rank 0's host (reusing its buffers; pinned
  // memory under a GPU) for a checkpoint written in the background, and returns true; the other
  // ranks copy nothing. False where the state can only stream through collectives (fsdp): the
  // caller saves synchronously.
  virtual bool snapshot(HostState& into) = 0;
  // Collective: the state hash of the current state (as save() would commit it for the run of
  // `genesis`, in checkpoint format `version`), on rank 0.
  virtual Digest state_hash(const Digest& genesis, uint32_t version = kCheckpointVersion) = 0;
  // Collective: the whole flat parameter vector (P,) on the host, meaningful on rank 0.
  virtual torch::Tensor full_params() = 0;
  // Collective: the whole state (parameters and AdamW moments) on rank 0's host; empty on the
  // other ranks.
  virtual HostState full_state() = 0;
  // Collective: the final weights as safetensors, written by rank 0.
  void export_model(const std::filesystem::path& file,
                    const std::map<std::string, std::string>& metadata);

  // --- What a step needs (trainer/step.cpp)
  // The micro-batches this rank computes, in the order it computes them.
  virtual std::vector<int64_t> micro_batches_of_rank(int64_t micro_batches) const = 0;
  // A unit's parameters as one flat tensor: a view of the local buffer, or gathered
  // (collective).
  virtual torch::Tensor unit_params(size_t unit) = 0;
  // Whether the backward recomputes each unit's forward from its saved input (fsdp: one unit's
  // parameters and graph in memory at a time) instead of keeping every unit's graph. The
  // recompute replays each unit's dropout generator, so the bits are the same either way.
  virtual bool recompute() const = 0;
  // Activation checkpointing (train.activation_checkpointing): ddp recomputes too, keeping one
  // unit's activations at a time. fsdp always does.
  void checkpoint_activations(bool on) { checkpoint_activations_ = on; }
  // The gradient of one step: begin_grads, then per micro-batch begin_micro_batch, unit_grad(u)
  // (zeroed, unit-sized, where unit u's gradient lands; the same buffer until unit_grad_done(u))
  // and unit_grad_done(u) for every unit, micro_batch_done; then summed_grads: this rank's part
  // of the gradient summed over all micro-batches and ranks in the canonical tree.
  virtual void begin_grads(int64_t local_micro_batches, bool canonical_reduction) = 0;
  virtual void begin_micro_batch() = 0;
  virtual torch::Tensor unit_grad(size_t unit) = 0;
  virtual void unit_grad_done(size_t unit) = 0;
  virtual void micro_batch_done() = 0;
  virtual torch::Tensor summed_grads() = 0;
  virtual void release_grads(torch::Tensor g) = 0;
  // The global L2 norm of the (averaged) gradient whose local part is `g` (collective).
  virtual double grad_norm(const torch::Tensor& g) = 0;
  // The parameters this rank updates: the local buffer's first local_count() elements, with the
  // weight-decay segments in local coordinates.
  virtual torch::Tensor& local_params() = 0;
  virtual int64_t local_count() const = 0;
  virtual std::vector<optim::DecaySegment> local_segments() const = 0;
  // This rank's share of the weight sketch: the sum over ranks is the sketch of all parameters.
  virtual witness::WeightSketch my_sketch() = 0;
  // Whether a forward without gradients is collective (fsdp gathers; ddp: rank 0 alone).
  virtual bool collective_forward() const = 0;

  // --- Fingerprints and evaluation (collective where the layout needs it; rank 0 has the value)
  // The behavioural fingerprint: the model's outputs on the probe batch.
  witness::FingerprintFields fingerprint(const MicroBatch& batch);
  float evaluate(const data::TokenStream& val, int64_t seq_len, int64_t micro_batch_size,
                 int64_t batches);
  // The weight sketch of the current parameters (collective; every rank gets it).
  witness::Fingerprint weight_fingerprint();

 protected:
  Layout(const model::GPTConfig& cfg, dist::Communicator& comm, const Compute& compute);
  model::GPTConfig cfg_;
  dist::Communicator& comm_;
  Compute compute_;
  std::vector<model::ParamSpec> specs_;
  std::vector<model::Unit> units_;
  torch::Tensor mask_;
  int64_t num_params_ = 0;
  OptimizerState opt_;
  bool checkpoint_activations_ = false;
};

// mode: dist.mode ("ddp" or "fsdp"); a single process always runs ddp. Checks every rule of
// the layout: the world size against M, for fsdp on N > 1 that M is a power of two, and for a
// GPU on N > 1 that `comm` carries device buffers (the NCCL backend).
std::unique_ptr<Layout> make_layout(const std::string& mode, const model::GPTConfig& cfg,
                                    int64_t micro_batches, dist::Communicator& comm,
                                    const Compute& compute = {});

// The behavioural fingerprint from the model's logits (S, T, V) on the probe batch with targets
// y (S, T): per sequence the mean log-probability of its targets (summed in a fixed order),
// and the digest of the argmax tokens.
witness::FingerprintFields fingerprint_of_logits(const torch::Tensor& logits, const torch::Tensor& y,
                                   int64_t steps_done);

}  // namespace wit
