#include "trainer/engine.h"

#include <optional>

#include "core/error.h"
#include "trainer/safetensors.h"
#include "trainer/sharded.h"

namespace wit {

namespace {

class Replicated final : public Engine {
 public:
  Replicated(const model::GPTConfig& cfg, dist::Communicator& comm)
      : model_(cfg), comm_(comm), pool_(padded_size(model_.num_params(), comm.size())) {}
  std::string layout() const override { return "replicated"; }
  int64_t num_params() const override { return model_.num_params(); }
  int64_t state_bytes() const override { return 3 * model_.num_params() * 4; }
  void init(uint64_t seed) override {
    model_.init_weights(seed);
    opt_ = OptimizerState::zeros(model_.num_params());
  }
  void load(const std::filesystem::path& file) override {
    Checkpoint c = load_checkpoint(file);  // every rank verifies the hash of what it loads
    model_.flat_params().copy_(c.params);
    opt_ = {c.m, c.v, c.info.step};
  }
  StepRecord step(const StepContext& ctx) override { return train_step(model_, opt_, ctx, pool_); }
  float evaluate(const data::TokenStream& val, int64_t T, int64_t b, int64_t batches) override {
    if (!comm_.is_root()) return 0.0f;  // replicated: rank 0 alone evaluates
    return wit::evaluate(model_, val, T, b, batches);
  }
  witness::ProbeFields probe(const MicroBatch& batch) override {
    if (!comm_.is_root()) return {};
    torch::NoGradGuard no_grad;
    return probe_outputs(model_.logits(batch.x), batch.y, opt_.step);
  }
  witness::Fingerprint weight_fingerprint() override {
    const int64_t P = model_.num_params();
    const auto [lo, hi] = sketch_slice(P, comm_.rank(), comm_.size());
    const float* p = model_.flat_params().data_ptr<float>();
    return sum_sketches(witness::sketch_weights(p + lo, lo, hi - lo), comm_).bytes();
  }
  Digest save(const std::filesystem::path& file, const CheckpointInfo& info) override {
    if (!comm_.is_root()) return {};
    return save_checkpoint(file, info, model_.flat_params(), opt_.m, opt_.v);
  }
  torch::Tensor full_params() override { return model_.flat_params(); }
  Digest state_hash(const Digest& genesis) override {
    if (!comm_.is_root()) return {};
    return wit::state_hash(genesis, opt_.step, model_.flat_params(), opt_.m, opt_.v);
  }
  void export_model(const std::filesystem::path& file,
                    const std::map<std::string, std::string>& metadata) override {
    if (comm_.is_root()) export_gpt2_safetensors(model_, file, metadata);
  }

 private:
  model::GPT model_;
  dist::Communicator& comm_;
  GradientPool pool_;
};

class Sharded final : public Engine {
 public:
  Sharded(const model::GPTConfig& cfg, dist::Communicator& comm)
      : model_(cfg, comm), comm_(comm), pool_(model_.layout().shard_size) {}
  std::string layout() const override { return "sharded"; }
  int64_t num_params() const override { return model_.num_params(); }
  int64_t state_bytes() const override { return 3 * model_.layout().shard_size * 4; }
  void init(uint64_t seed) override {
    model_.init_weights(seed);
    opt_ = OptimizerState::zeros(model_.layout().shard_size);
  }
  void load(const std::filesystem::path& file) override {
    const auto& L = model_.layout();
    if (comm_.is_root()) verify_checkpoint(file);  // one rank streams the whole file's hash
    comm_.barrier();
    Checkpoint c = load_checkpoint_range(file, L.begin, L.shard_size);
    WIT_CHECK(c.info.num_params == L.num_params, "checkpoint has {} parameters, model {}",
              c.info.num_params, L.num_params);
    model_.params_shard().copy_(c.params);
    opt_ = {c.m, c.v, c.info.step};
  }
  StepRecord step(const StepContext& ctx) override {
    return train_step_sharded(model_, opt_, ctx, pool_);
  }
  float evaluate(const data::TokenStream& val, int64_t T, int64_t b, int64_t batches) override {
    return model_.evaluate(val, T, b, batches);
  }
  witness::ProbeFields probe(const MicroBatch& batch) override {
    auto logits = model_.logits(batch.x);  // every rank takes part in the gathers
    if (!comm_.is_root()) return {};
    return probe_outputs(logits, batch.y, opt_.step);
  }
  witness::Fingerprint weight_fingerprint() override {
    const auto& L = model_.layout();
    const float* shard = model_.params_shard().data_ptr<float>();
    return sum_sketches(witness::sketch_weights(shard, L.begin, L.owned()), comm_).bytes();
  }
  // Shards stream through rank 0 into the one canonical file.
  Digest save(const std::filesystem::path& file, const CheckpointInfo& info) override {
    std::optional<CheckpointWriter> w;
    if (comm_.is_root()) {
      CheckpointInfo i = info;
      i.num_params = model_.layout().num_params;
      w.emplace(file, i);
    }
    stream_state([&](const float* p, int64_t n) { w->write(p, n); });
    return w ? w->finish() : Digest{};
  }
  torch::Tensor full_params() override { return model_.gather_all(); }
  Digest state_hash(const Digest& genesis) override {
    std::optional<Sha256> h;
    if (comm_.is_root()) h = state_hasher(genesis, opt_.step, model_.layout().num_params);
    stream_state([&](const float* p, int64_t n) { h->update(p, size_t(n) * sizeof(float)); });
    return h ? h->finish() : Digest{};
  }
  void export_model(const std::filesystem::path& file,
                    const std::map<std::string, std::string>& metadata) override {
    torch::Tensor full = model_.gather_all();
    if (!comm_.is_root()) return;
    model::GPT replica(model_.config());
    replica.flat_params().copy_(full);
    export_gpt2_safetensors(replica, file, metadata);
  }

 private:
  // Collective: every rank's params, m and v shards reach rank 0, which hands the canonical
  // order (params of ranks 0..N−1, then m, then v) to `sink` without the padding.
  template <typename Sink>
  void stream_state(Sink&& sink) {
    const auto& L = model_.layout();
    const torch::Tensor* parts[3] = {&model_.params_shard(), &opt_.m, &opt_.v};
    if (!comm_.is_root()) {
      for (auto* t : parts) comm_.send(t->data_ptr<float>(), size_t(L.shard_size) * 4, 0);
      return;
    }
    std::vector<std::vector<torch::Tensor>> shards(size_t(L.world));
    for (int r = 1; r < L.world; ++r)
      for (int k = 0; k < 3; ++k) {
        shards[size_t(r)].push_back(torch::empty({L.shard_size}, torch::kFloat32));
        comm_.recv(shards[size_t(r)].back().data_ptr<float>(), size_t(L.shard_size) * 4, r);
      }
    for (int k = 0; k < 3; ++k)
      for (int r = 0; r < L.world; ++r) {
        const int64_t n =
            std::clamp<int64_t>(L.num_params - int64_t(r) * L.shard_size, 0, L.shard_size);
        const torch::Tensor& t = r == 0 ? *parts[k] : shards[size_t(r)][size_t(k)];
        sink(t.data_ptr<float>(), n);
      }
  }

  ShardedGPT model_;
  dist::Communicator& comm_;
  GradientPool pool_;
};

}  // namespace

std::unique_ptr<Engine> make_engine(const std::string& mode, const model::GPTConfig& cfg,
                                    dist::Communicator& comm) {
  if (mode == "fsdp" && comm.size() > 1) return std::make_unique<Sharded>(cfg, comm);
  WIT_CHECK(mode == "ddp" || mode == "fsdp", "unknown dist.mode {}", mode);
  return std::make_unique<Replicated>(cfg, comm);
}

}  // namespace wit
