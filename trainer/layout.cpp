#include "trainer/layout.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "trainer/bucket_reducer.h"
#include "trainer/device_ops.h"
#include "trainer/host_read.h"
#include "trainer/safetensors.h"
#include "trainer/step.h"
#include "trainer/tree_sum.h"

namespace wit {

OptimizerState OptimizerState::zeros(int64_t n, const torch::TensorOptions& options) {
  const auto o = options.dtype(torch::kFloat32);
  return {torch::zeros({n}, o), torch::zeros({n}, o), 0};
}

torch::Tensor GradientPool::take() {
  if (free_.empty()) return torch::zeros({n_}, options_);
  auto t = std::move(free_.back());
  free_.pop_back();
  t.zero_();
  return t;
}

Layout::Layout(const model::GPTConfig& cfg, dist::Communicator& comm, const Compute& compute)
    : cfg_(cfg),
      comm_(comm),
      compute_(compute),
      specs_(model::gpt_param_specs(cfg)),
      units_(model::gpt_units(cfg)),
      mask_(model::causal_mask(cfg.context).to(compute.device)),
      num_params_(model::gpt_param_count(cfg)) {
  WIT_CHECK(cfg.n_embd % cfg.n_head == 0, "n_embd {} not divisible by n_head {}", cfg.n_embd,
            cfg.n_head);
}

witness::FingerprintFields Layout::fingerprint(const MicroBatch& batch) {
  if (!collective_forward() && !comm_.is_root()) return {};
  auto logits = forward_logits(*this, batch.x.to(compute_.device));
  if (!comm_.is_root()) return {};
  return fingerprint_of_logits(to_host(logits), batch.y, opt_.step);
}

float Layout::evaluate(const data::TokenStream& val, int64_t T, int64_t b, int64_t batches) {
  if (!collective_forward() && !comm_.is_root()) return 0.0f;  // ddp: rank 0 alone evaluates
  std::vector<torch::Tensor> token_losses;  // on the device until all batches are done
  for (int64_t k = 0; k < batches; ++k) {
    const MicroBatch mb = to_micro_batch(eval_batch_tokens(val, T, b, k), b, T);
    const auto logits = forward_logits(*this, mb.x.to(compute_.device)).to(torch::kFloat32);
    token_losses.push_back(model::cross_entropy_mean(logits, mb.y.to(compute_.device)).token_losses);
  }
  double total = 0.0;
  for (double l : loss_values(token_losses)) total += l;
  return float(total / double(batches));
}

witness::Fingerprint Layout::weight_fingerprint() { return sum_sketches(my_sketch(), comm_).bytes(); }

void Layout::export_model(const std::filesystem::path& file,
                          const std::map<std::string, std::string>& metadata) {
  torch::Tensor full = full_params();
  if (comm_.is_root()) export_gpt2_safetensors(cfg_, full.to(torch::kCPU), file, metadata);
}

witness::FingerprintFields fingerprint_of_logits(const torch::Tensor& logits, const torch::Tensor& y,
                                   int64_t steps_done) {
  torch::NoGradGuard no_grad;
  const int64_t S = y.size(0), T = y.size(1);
  auto logp = torch::log_softmax(logits, -1)
                  .gather(-1, y.unsqueeze(-1))
                  .squeeze(-1)
                  .to(torch::kCPU, torch::kFloat32)
                  .contiguous();
  auto argmax = logits.argmax(-1).to(torch::kCPU, torch::kInt64).contiguous();
  const float* lp = logp.data_ptr<float>();
  const int64_t* am = argmax.data_ptr<int64_t>();
  witness::FingerprintFields f;
  f.step = uint64_t(steps_done);
  for (int64_t s = 0; s < S; ++s) {
    double sum = 0;  // left to right: a fixed order whatever the thread count
    for (int64_t t = 0; t < T; ++t) sum += double(lp[s * T + t]);
    f.mean_logprob.push_back(float(sum / double(T)));
  }
  std::vector<uint16_t> tokens(am, am + S * T);
  f.argmax_digest = witness::fingerprint_argmax_digest(tokens);
  return f;
}

namespace {

// ---------------------------------------------------------------------------------------------
// ddp: the whole state on every rank.

class DdpLayout final : public Layout {
 public:
  DdpLayout(const model::GPTConfig& cfg, dist::Communicator& comm, const Compute& compute)
      : Layout(cfg, comm, compute),
        flat_(torch::empty({num_params_}, options())),
        pool_(padded_size(num_params_, comm.size()), options()) {}
  std::string name() const override { return "ddp"; }
  int64_t state_bytes() const override { return 3 * num_params_ * 4; }
  void init(uint64_t seed) override {
    model::init_params(cfg_, seed, 0, flat_);
    opt_ = OptimizerState::zeros(num_params_, options());
  }
  void init_from(const torch::Tensor& params) override {
    WIT_CHECK(params.numel() == num_params_, "{} initial parameters for a model of {}",
              params.numel(), num_params_);
    flat_.copy_(params);
    opt_ = OptimizerState::zeros(num_params_, options());
  }
  void load(const std::filesystem::path& file, const Digest& expected) override {
    Checkpoint c;
    // Every rank verifies the hash of what it loads; a rank that cannot, stops them all.
    dist::agree_on_errors(comm_, [&] {
      c = load_checkpoint(file);
      require_state(c.info, file, &expected);
      WIT_CHECK(c.info.num_params == num_params_, "checkpoint has {} parameters, model {}",
                c.info.num_params, num_params_);
    });
    flat_.copy_(c.params);
    opt_ = {c.m.to(compute_.device), c.v.to(compute_.device), c.info.step};
  }
  Digest save(const std::filesystem::path& file, const CheckpointInfo& info) override {
    if (!comm_.is_root()) return {};
    const auto host = [](const torch::Tensor& t) { return t.to(torch::kCPU); };
    return save_checkpoint(file, info, host(flat_), host(opt_.m), host(opt_.v));
  }
  bool snapshot(HostState& into) override {
    if (!comm_.is_root()) return true;
    const auto copy = [&](torch::Tensor& to, const torch::Tensor& from) {
      if (!to.defined() || to.numel() != from.numel())
        to = torch::empty({from.numel()},
                          torch::TensorOptions(torch::kFloat32).pinned_memory(from.is_cuda()));
      to.copy_(from);  // synchronous: the next step may change `from`
    };
    copy(into.params, flat_);
    copy(into.m, opt_.m);
    copy(into.v, opt_.v);
    return true;
  }
  Digest state_hash(const Digest& genesis, uint32_t version) override {
    if (!comm_.is_root()) return {};
    const auto host = [](const torch::Tensor& t) { return t.to(torch::kCPU); };
    return wit::state_hash(genesis, opt_.step, host(flat_), host(opt_.m), host(opt_.v), version);
  }
  torch::Tensor full_params() override { return flat_.to(torch::kCPU); }
  HostState full_state() override {
    HostState s;
    snapshot(s);
    return s;
  }

  // Rank r computes the aligned block [r·M/N, (r+1)·M/N): a subtree of the canonical tree.
  std::vector<int64_t> micro_batches_of_rank(int64_t M) const override {
    const int64_t B = M / comm_.size();
    std::vector<int64_t> out;
    for (int64_t i = comm_.rank() * B; i < (comm_.rank() + 1) * B; ++i) out.push_back(i);
    return out;
  }
  torch::Tensor unit_params(size_t u) override { return slice(flat_, u); }
  bool recompute() const override { return checkpoint_activations_; }
  void begin_grads(int64_t count, bool canonical) override {
    count_ = count;
    done_ = 0;
    canonical_ = canonical;
    sum_.emplace(count, Add{this});
  }
  // With several ranks, the last micro-batch's units are summed over ranks as they finish.
  void begin_micro_batch() override {
    cur_ = pool_.take();
    if (comm_.size() > 1 && done_ + 1 == count_) reducer_.emplace(comm_, canonical_);
  }
  torch::Tensor unit_grad(size_t u) override { return slice(cur_, u); }
  void unit_grad_done(size_t u) override {
    if (!reducer_) return;
    // Finish the local tree on this unit's slice and hand it to the reducer, which sums it over
    // ranks while the backward of the units before it goes on. Buckets are units.
    auto part = sum_->map([&](const torch::Tensor& t) { return slice(t, u); },
                          [](torch::Tensor& a, const torch::Tensor& x) { a.add_(x); });
    part.push(slice(cur_, u));
    reducer_->post(part.result());
  }
  void micro_batch_done() override {
    if (reducer_) {
      reducer_->wait();
      reducer_.reset();
      // Every slice is summed already: this push only moves the buffers through the same tree.
      arithmetic_ = false;
      sum_->push(std::move(cur_));
      arithmetic_ = true;
    } else {
      sum_->push(std::move(cur_));
    }
    ++done_;
  }
  torch::Tensor summed_grads() override {
    torch::Tensor g = sum_->result();
    sum_.reset();
    return g;
  }
  void release_grads(torch::Tensor g) override { pool_.give(std::move(g)); }
  double grad_norm(const torch::Tensor& g) override {
    return optim::norm_from_partials(
        grad_norm_partials(g, num_params_, compute().fused_optimizer()));
  }
  torch::Tensor& local_params() override { return flat_; }
  int64_t local_count() const override { return num_params_; }
  std::vector<optim::DecaySegment> local_segments() const override {
    return decay_segments_of(specs_);
  }
  // Each rank sketches its slice of the (replicated) parameters.
  witness::WeightSketch my_sketch() override {
    const auto [lo, hi] = sketch_slice(num_params_, comm_.rank(), comm_.size());
    return sketch_weights(flat_.narrow(0, lo, hi - lo), lo);
  }
  bool collective_forward() const override { return false; }

 private:
  torch::Tensor slice(const torch::Tensor& t, size_t u) const {
    return t.narrow(0, units_[u].begin, units_[u].end - units_[u].begin);
  }
  struct Add {
    DdpLayout* self;
    void operator()(torch::Tensor& acc, const torch::Tensor& x) const {
      if (self->arithmetic_) acc.add_(x);
      self->pool_.give(x);
    }
  };

  torch::Tensor flat_;  // (P,) fp32
  GradientPool pool_;
  std::optional<CanonicalSum<torch::Tensor, Add>> sum_;
  std::optional<BucketReducer> reducer_;
  torch::Tensor cur_;  // the current micro-batch's gradient
  int64_t count_ = 0, done_ = 0;
  bool canonical_ = true, arithmetic_ = true;
};

// ---------------------------------------------------------------------------------------------
// fsdp: contiguous shards of the flat buffer, zero-padded to N·S. S is a multiple of the
// gradient-norm chunk, so every norm chunk lies in one shard.
//
// How the canonical tree survives sharding: in round j rank r computes micro-batch j·N + r, and
// each unit's gradient is reduce-scattered over ranks in the canonical tree right after its
// backward, so round j yields the sum of micro-batches jN..jN+N−1 (an aligned subtree); each
// rank then sums the rounds of its shard in the canonical tree. With M a power of two this is
// exactly the tree of the ddp step.

class FsdpLayout final : public Layout {
 public:
  FsdpLayout(const model::GPTConfig& cfg, dist::Communicator& comm, const Compute& compute)
      : Layout(cfg, comm, compute),
        world_(comm.size()),
        rank_(comm.rank()),
        shard_size_((num_params_ + int64_t(world_) * optim::kNormChunk - 1) /
                    (int64_t(world_) * optim::kNormChunk) * optim::kNormChunk),
        begin_(int64_t(rank_) * shard_size_),
        shard_(torch::zeros({shard_size_}, options())),
        pool_(shard_size_, options()) {}
  std::string name() const override { return "fsdp"; }
  int64_t state_bytes() const override { return 3 * shard_size_ * 4; }
  void init(uint64_t seed) override {
    torch::Tensor mine = shard_.narrow(0, 0, owned());
    model::init_params(cfg_, seed, begin_, mine);
    opt_ = OptimizerState::zeros(shard_size_, options());
  }
  void init_from(const torch::Tensor& params) override {
    WIT_CHECK(params.numel() == num_params_, "{} initial parameters for a model of {}",
              params.numel(), num_params_);
    shard_.narrow(0, 0, owned()).copy_(params.narrow(0, begin_, owned()));
    opt_ = OptimizerState::zeros(shard_size_, options());
  }
  void load(const std::filesystem::path& file, const Digest& expected) override {
    // Each rank checks what it loads against the state hash it expects, in its own open: the
    // leaves it reads against the leaf table (version 3), or the whole payload (version 2, which
    // has no table).
    Checkpoint c;
    dist::agree_on_errors(comm_, [&] {
      c = load_checkpoint_range(file, begin_, shard_size_, &expected);
      WIT_CHECK(c.info.num_params == num_params_, "checkpoint has {} parameters, model {}",
                c.info.num_params, num_params_);
    });
    shard_.copy_(c.params);
    opt_ = {c.m.to(compute_.device), c.v.to(compute_.device), c.info.step};
  }
  // Shards stream through rank 0 into the one canonical file.
  Digest save(const std::filesystem::path& file, const CheckpointInfo& info) override {
    std::optional<CheckpointWriter> w;
    if (comm_.is_root()) {
      CheckpointInfo i = info;
      i.num_params = num_params_;
      w.emplace(file, i);
    }
    stream_state([&](const float* p, int64_t n) { w->write(p, n); });
    return w ? w->finish() : Digest{};
  }
  bool snapshot(HostState&) override { return false; }  // a whole copy on rank 0 defeats sharding
  Digest state_hash(const Digest& genesis, uint32_t version) override {
    std::optional<StateHasher> h;
    if (comm_.is_root()) h.emplace(genesis, opt_.step, num_params_, version);
    stream_state([&](const float* p, int64_t n) { h->update(p, size_t(n) * sizeof(float)); });
    return h ? h->finish() : Digest{};
  }
  HostState full_state() override {
    torch::Tensor all;  // parameters, m, v, as the state streams to rank 0
    if (comm_.is_root()) all = torch::empty({3 * num_params_}, torch::kFloat32);
    int64_t at = 0;
    stream_state([&](const float* p, int64_t n) {
      std::memcpy(all.data_ptr<float>() + at, p, size_t(n) * sizeof(float));
      at += n;
    });
    if (!comm_.is_root()) return {};
    return {all.narrow(0, 0, num_params_), all.narrow(0, num_params_, num_params_),
            all.narrow(0, 2 * num_params_, num_params_)};
  }
  torch::Tensor full_params() override {
    auto full = torch::empty({num_params_}, torch::kFloat32);
    for (size_t u = 0; u < units_.size(); ++u)
      full.narrow(0, units_[u].begin, units_[u].end - units_[u].begin).copy_(unit_params(u));
    return full;
  }

  std::vector<int64_t> micro_batches_of_rank(int64_t M) const override {
    std::vector<int64_t> out;
    for (int64_t j = 0; j < M / world_; ++j) out.push_back(j * world_ + rank_);
    return out;
  }
  // The unit's full parameters, gathered from every rank's shard (collective).
  torch::Tensor unit_params(size_t u) override {
    const auto& unit = units_[u];
    auto full = torch::empty({unit.end - unit.begin}, options());
    const int64_t from = std::max<int64_t>(0, std::max(unit.begin, begin_) - begin_);
    comm_.all_gather_v(shard_.data_ptr<float>() + from, full.data_ptr<float>(),
                       counts(unit.begin, unit.end));
    return full;
  }
  bool recompute() const override { return true; }
  void begin_grads(int64_t rounds, bool) override {
    rounds_.emplace(rounds, Add{this});
  }
  void begin_micro_batch() override { acc_ = pool_.take(); }
  torch::Tensor unit_grad(size_t u) override {
    auto g = torch::zeros({units_[u].end - units_[u].begin}, options());
    open_[u] = g;
    return g;
  }
  // Reduce-scatters the unit's gradient and adds this rank's part into the round's shard.
  void unit_grad_done(size_t u) override {
    torch::Tensor g = std::move(open_.at(u));
    open_.erase(u);
    const auto& unit = units_[u];
    auto c = counts(unit.begin, unit.end);
    comm_.reduce_scatter_canonical_v(g.data_ptr<float>(), c);
    const int64_t mine = c[size_t(rank_)];
    if (mine == 0) return;
    int64_t at = 0;  // offset of this rank's block within the unit
    for (int r = 0; r < rank_; ++r) at += c[size_t(r)];
    const int64_t dst = std::max(unit.begin, begin_) - begin_;
    acc_.narrow(0, dst, mine).copy_(g.narrow(0, at, mine));
  }
  void micro_batch_done() override { rounds_->push(std::move(acc_)); }
  torch::Tensor summed_grads() override {
    torch::Tensor g = rounds_->result();
    rounds_.reset();
    return g;
  }
  void release_grads(torch::Tensor g) override { pool_.give(std::move(g)); }
  // This shard's chunk partials, gathered in rank (= chunk) order.
  double grad_norm(const torch::Tensor& g) override {
    auto mine = grad_norm_partials(g, shard_size_, compute().fused_optimizer());
    std::vector<double> partials(mine.size() * size_t(world_));
    comm_.all_gather_bytes(mine.data(), mine.size() * sizeof(double), partials.data());
    return optim::norm_from_partials(partials);
  }
  torch::Tensor& local_params() override { return shard_; }
  int64_t local_count() const override { return owned(); }
  std::vector<optim::DecaySegment> local_segments() const override {
    std::vector<optim::DecaySegment> segs;
    for (auto s : decay_segments_of(specs_)) segs.push_back({s.begin - begin_, s.end - begin_, s.decay});
    return segs;
  }
  witness::WeightSketch my_sketch() override {
    return sketch_weights(shard_.narrow(0, 0, owned()), begin_);
  }
  bool collective_forward() const override { return true; }

 private:
  int64_t owned() const { return std::clamp<int64_t>(num_params_ - begin_, 0, shard_size_); }
  // Per rank, how many elements of [lo, hi) its shard holds.
  std::vector<int64_t> counts(int64_t lo, int64_t hi) const {
    std::vector<int64_t> c(static_cast<size_t>(world_));
    for (int r = 0; r < world_; ++r) {
      const int64_t b = std::max(lo, int64_t(r) * shard_size_);
      const int64_t e = std::min(hi, int64_t(r + 1) * shard_size_);
      c[size_t(r)] = std::max<int64_t>(0, e - b);
    }
    return c;
  }
  // Collective: every rank's params, m and v shards reach rank 0 in the canonical order
  // (params of ranks 0..N−1, then m, then v), without the padding, in pieces of at most
  // kStreamChunk floats: rank 0 holds one piece of another rank's state at a time.
  static constexpr int64_t kStreamChunk = int64_t(1) << 20;
  template <typename Sink>
  void stream_state(Sink&& sink) {
    const torch::Tensor* parts[3] = {&shard_, &opt_.m, &opt_.v};
    auto real = [&](int r) {
      return std::clamp<int64_t>(num_params_ - int64_t(r) * shard_size_, 0, shard_size_);
    };
    if (!comm_.is_root()) {
      for (auto* t : parts)
        for (int64_t at = 0; at < real(rank_); at += kStreamChunk)
          comm_.send(t->data_ptr<float>() + at,
                     size_t(std::min(kStreamChunk, real(rank_) - at)) * sizeof(float), 0);
      return;
    }
    std::vector<float> piece(size_t(std::min(kStreamChunk, shard_size_)));
    for (int k = 0; k < 3; ++k)
      for (int r = 0; r < world_; ++r) {
        if (r == 0) {
          if (parts[k]->is_cpu()) {
            sink(parts[k]->data_ptr<float>(), real(0));
          } else {
            for (int64_t at = 0; at < real(0); at += kStreamChunk) {
              const int64_t n = std::min(kStreamChunk, real(0) - at);
              const auto host = parts[k]->narrow(0, at, n).to(torch::kCPU);
              sink(host.data_ptr<float>(), n);
            }
          }
          continue;
        }
        for (int64_t at = 0; at < real(r); at += kStreamChunk) {
          const int64_t n = std::min(kStreamChunk, real(r) - at);
          comm_.recv(piece.data(), size_t(n) * sizeof(float), r);
          sink(piece.data(), n);
        }
      }
  }
  struct Add {
    FsdpLayout* self;
    void operator()(torch::Tensor& acc, const torch::Tensor& x) const {
      acc.add_(x);
      self->pool_.give(x);
    }
  };

  int world_, rank_;
  int64_t shard_size_, begin_;
  torch::Tensor shard_;  // (S,) fp32
  GradientPool pool_;
  std::optional<CanonicalSum<torch::Tensor, Add>> rounds_;
  torch::Tensor acc_;  // the current round's shard of the gradient
  std::map<size_t, torch::Tensor> open_;  // unit gradients handed out, not yet done
};

}  // namespace

std::unique_ptr<Layout> make_layout(const std::string& mode, const model::GPTConfig& cfg,
                                    int64_t M, dist::Communicator& comm, const Compute& compute) {
  if (mode != "ddp" && mode != "fsdp") fail("unknown dist.mode {}: ddp or fsdp", mode);
  dist::check_world_size(comm.size(), M);
  if (compute.is_cuda() && comm.size() > 1 && comm.backend() != "nccl" &&
      comm.backend().find("host-staging") == std::string::npos)
    fail(
        "train.device = cuda on {} processes needs a process group that carries device buffers "
        "(NCCL, or the CPU one staged through the host: trainer/device_comm.h), not {}",
        comm.size(), comm.backend());
  if (mode == "fsdp" && comm.size() > 1) {
    if ((M & (M - 1)) != 0)
      fail(
          "dist.mode = fsdp needs train.micro_batches to be a power of two (got {}): sharded "
          "rounds of {} micro-batches must be subtrees of the canonical sum",
          M, comm.size());
    return std::make_unique<FsdpLayout>(cfg, comm, compute);
  }
  return std::make_unique<DdpLayout>(cfg, comm, compute);
}

}  // namespace wit
