// What one rank holds of the training state and how it steps, evaluates, checkpoints and
// exports it, for each layout: replicated (one process, or DDP: full state on every rank) and
// sharded (FSDP-style). The training loop drives either; both give the same bits.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "trainer/checkpoint.h"
#include "trainer/dist/communicator.h"
#include "trainer/model/gpt.h"
#include "trainer/step.h"

namespace wit {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string layout() const = 0;  // "replicated" or "sharded"
  virtual int64_t num_params() const = 0;
  // Model state bytes this rank holds at rest (parameters, moments; gradients are transient).
  virtual int64_t state_bytes() const = 0;
  virtual void init(uint64_t seed) = 0;
  // Every rank loads its part of a checkpoint written by any layout and world size.
  virtual void load(const std::filesystem::path& checkpoint) = 0;
  virtual StepRecord step(const StepContext& ctx) = 0;
  // Collective where the layout needs it; the value is meaningful on rank 0.
  virtual float evaluate(const data::TokenStream& val, int64_t seq_len, int64_t micro_batch_size,
                         int64_t batches) = 0;
  // The behavioural fingerprint on the probe batch (collective where the layout needs it; the
  // value is meaningful on rank 0).
  virtual witness::ProbeFields probe(const MicroBatch& batch) = 0;
  // The weight sketch of the current parameters (collective; every rank gets it).
  virtual witness::Fingerprint weight_fingerprint() = 0;
  // Collective: the whole state into one file, written by rank 0, which gets the state hash.
  virtual Digest save(const std::filesystem::path& file, const CheckpointInfo& info) = 0;
  // Collective: the whole flat parameter vector (P,), meaningful on rank 0.
  virtual torch::Tensor full_params() = 0;
  // Collective: the state hash of the current state (as save() would commit it for the run of
  // `genesis`), on rank 0.
  virtual Digest state_hash(const Digest& genesis) = 0;
  // Collective: the final weights as safetensors, written by rank 0.
  virtual void export_model(const std::filesystem::path& file,
                            const std::map<std::string, std::string>& metadata) = 0;
  int64_t steps_done() const { return opt_.step; }

 protected:
  OptimizerState opt_;
};

// mode: "ddp" (replicated) or "fsdp" (sharded); a single process always runs replicated.
std::unique_ptr<Engine> make_engine(const std::string& mode, const model::GPTConfig& cfg,
                                    dist::Communicator& comm);

}  // namespace wit
