#include "trainer/step.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "trainer/device_ops.h"
#include "trainer/host_read.h"
#include "trainer/model/cross_entropy.h"
#include "trainer/tree_sum.h"

namespace wit {

uint64_t micro_batch_seed(uint64_t run_seed, int64_t step, int64_t micro) {
  return digest_prefix_u64(Sha256()
                               .update("wit-rng-v1")
                               .update_u64(run_seed)
                               .update_u64(uint64_t(step))
                               .update_u64(uint64_t(micro))
                               .finish());
}

uint64_t init_seed(uint64_t run_seed) {
  return digest_prefix_u64(Sha256().update("wit-init-v1").update_u64(run_seed).finish());
}

StepContext make_step_context(const RunConfig& rc, const BatchSource& batches) {
  StepContext ctx;
  ctx.data = &batches;
  ctx.optim = rc.optim;
  ctx.total_steps = rc.train.steps;
  ctx.run_seed = rc.train.seed;
  ctx.canonical_reduction = rc.dist_reduction == "canonical";
  return ctx;
}

std::vector<optim::DecaySegment> decay_segments_of(const std::vector<model::ParamSpec>& specs) {
  std::vector<optim::DecaySegment> segs;
  for (auto& s : specs) {
    if (!segs.empty() && segs.back().decay == s.decay && segs.back().end == s.offset)
      segs.back().end = s.offset + s.numel;
    else
      segs.push_back({s.offset, s.offset + s.numel, s.decay});
  }
  return segs;
}

int64_t padded_size(int64_t num_params, int world) {
  return (num_params + world - 1) / world * world;
}

StepRecord begin_step(const BatchSource& data, int64_t step, const StepContext& ctx) {
  StepRecord rec;
  rec.step = step;
  rec.tokens = data.micro_batches() * data.micro_batch_size() * data.seq_len();
  rec.hyper = optim::hyper_at(ctx.optim, step, ctx.total_steps);
  return rec;
}

PreparedMicroBatch prepare_micro_batch(const StepContext& ctx, int64_t step, int64_t micro,
                                       std::vector<MicroBatchWitness>& witnessed,
                                       const torch::Device& device) {
  const BatchSource& data = *ctx.data;
  auto tokens = data.micro_batch_tokens(step, micro);
  const uint64_t seed = micro_batch_seed(ctx.run_seed, step, micro);
  if (ctx.witness)
    witnessed.push_back({micro, witness::micro_batch_hash(tokens.data(), tokens.size()), seed});
  const int64_t T = data.seq_len();
  MicroBatch mb = to_micro_batch(tokens, int64_t(tokens.size()) / (T + 1), T);
  if (device.is_cpu()) return {std::move(mb), at::make_generator<at::CPUGeneratorImpl>(seed)};
  // The device's own generator kind, seeded alike: dropout masks are drawn where they are used.
  torch::Generator gen = at::globalContext().defaultGenerator(device).clone();
  gen.set_current_seed(seed);
  // From page-locked memory, asynchronously: a copy from pageable memory would first wait for
  // the device to finish the previous micro-batch. libtorch keeps the pinned buffer until the
  // copy is done.
  const auto upload = [&](const torch::Tensor& t) { return t.pin_memory().to(device, true); };
  return {{upload(mb.x), upload(mb.y)}, std::move(gen)};
}

StepRecord committed_inputs(const StepContext& ctx, int64_t step) {
  StepRecord rec = begin_step(*ctx.data, step, ctx);
  std::vector<Digest> hashes;
  std::vector<uint64_t> seeds;
  for (int64_t i = 0; i < ctx.data->micro_batches(); ++i) {
    const auto tokens = ctx.data->micro_batch_tokens(step, i);
    hashes.push_back(witness::micro_batch_hash(tokens.data(), tokens.size()));
    seeds.push_back(micro_batch_seed(ctx.run_seed, step, i));
  }
  rec.batch_hash = witness::batch_hash(hashes);
  rec.rng_commitment = witness::rng_commitment(seeds);
  return rec;
}

std::pair<int64_t, int64_t> sketch_slice(int64_t P, int rank, int world) {
  return {P * rank / world, P * (rank + 1) / world};
}

witness::WeightSketch sum_sketches(const witness::WeightSketch& mine, dist::Communicator& comm) {
  std::vector<witness::WeightSketch> all(size_t(comm.size()));
  comm.all_gather_bytes(&mine, sizeof mine, all.data());
  witness::WeightSketch sum;
  for (auto& s : all) sum += s;
  return sum;
}

void seal_record(StepRecord& rec, const std::vector<MicroBatchWitness>& mine,
                 const witness::WeightSketch& my_weights, int64_t M, dist::Communicator& comm) {
  // One message per rank: its sketch, then (index, hash, seed) per micro-batch. Every rank holds
  // M/N micro-batches, so the messages are the same size.
  struct Fact {
    uint64_t index;
    Digest hash;
    uint64_t seed;
  };
  const size_t per_rank = sizeof(witness::WeightSketch) + mine.size() * sizeof(Fact);
  std::vector<uint8_t> out(per_rank), all(per_rank * size_t(comm.size()));
  std::memcpy(out.data(), &my_weights, sizeof my_weights);
  for (size_t k = 0; k < mine.size(); ++k) {
    const Fact f{uint64_t(mine[k].index), mine[k].tokens_hash, mine[k].seed};
    std::memcpy(out.data() + sizeof my_weights + k * sizeof(Fact), &f, sizeof f);
  }
  comm.all_gather_bytes(out.data(), per_rank, all.data());

  std::vector<Digest> hashes(static_cast<size_t>(M));
  std::vector<uint64_t> seeds(static_cast<size_t>(M));
  std::vector<bool> seen(static_cast<size_t>(M), false);
  witness::WeightSketch weights;
  for (int r = 0; r < comm.size(); ++r) {
    const uint8_t* msg = all.data() + size_t(r) * per_rank;
    witness::WeightSketch s;
    std::memcpy(&s, msg, sizeof s);
    weights += s;
    for (size_t k = 0; k < mine.size(); ++k) {
      Fact f;
      std::memcpy(&f, msg + sizeof s + k * sizeof(Fact), sizeof f);
      WIT_CHECK(f.index < uint64_t(M) && !seen[f.index], "rank {} reported micro-batch {}", r,
                f.index);
      seen[f.index] = true;
      hashes[f.index] = f.hash;
      seeds[f.index] = f.seed;
    }
  }
  rec.batch_hash = witness::batch_hash(hashes);
  rec.rng_commitment = witness::rng_commitment(seeds);
  rec.weight_fingerprint = weights.bytes();
}

namespace {

// Leaves for a unit's parameters (views of `params`) whose gradients accumulate into `grad`.
std::vector<torch::Tensor> leaves(const Layout& L, size_t u, const torch::Tensor& params,
                                  const torch::Tensor& grad) {
  auto views = model::unit_tensors(L.specs(), L.units()[u], params);
  auto grads = model::unit_tensors(L.specs(), L.units()[u], grad);
  for (size_t i = 0; i < views.size(); ++i) {
    views[i] = views[i].detach().requires_grad_();
    views[i].mutable_grad() = grads[i];
  }
  return views;
}

// Under bf16 autocast every matmul casts its fp32 weight and bias to bf16 in each micro-batch's
// forward (again when a unit is recomputed), and the cast's backward widens their bf16 gradients
// to fp32 before they are added to the unit's gradient: two kernels a tensor a micro-batch.
// Instead the step passes the matmuls bf16 copies as leaves and adds their bf16 gradients into
// the fp32 gradient in one mixed-precision add. The copies are cast once a step where every
// unit's activations are kept (ddp); on each use where units are recomputed (activation
// checkpointing keeps one unit's memory at a time; fsdp always recomputes, gathering its
// parameters anew). The same bits: the copy is the cast autocast makes, the matmuls and their
// gradients are the same, and the add is the same fp32 sum of the same values, in the same order.
class Bf16Weights {
 public:
  explicit Bf16Weights(const Layout& L)
      : on_(L.compute().bf16 && L.compute().bf16_weights_once),
        keep_(!L.recompute()),
        pending_(L.units().size()) {}
  // In place of `fp32_leaf` (its gradient preset to a view of the unit's gradient): a bf16 leaf
  // whose gradient add_grads(u) adds into that view.
  torch::Tensor leaf(size_t u, size_t i, const torch::Tensor& fp32_leaf) {
    if (!on_) return fp32_leaf;
    auto l = copy(u, i, fp32_leaf).detach().requires_grad_();
    pending_[u].emplace_back(l, fp32_leaf.grad());
    return l;
  }
  // After unit u's backward, before its gradient is handed on.
  void add_grads(size_t u) {
    for (auto& [l, g] : pending_[u])
      if (l.grad().defined()) g.add_(l.grad());
    pending_[u].clear();
  }
  void release() { kept_.clear(); }

 private:
  torch::Tensor copy(size_t u, size_t i, const torch::Tensor& value) {
    if (!keep_) return value.detach().to(torch::kBFloat16);
    auto& c = kept_[{u, i}];
    if (!c.defined()) c = value.detach().to(torch::kBFloat16);  // its own allocation, aligned
    return c;
  }
  bool on_, keep_;
  std::map<std::pair<size_t, size_t>, torch::Tensor> kept_;
  std::vector<std::vector<std::pair<torch::Tensor, torch::Tensor>>> pending_;  // (bf16, grad)
};

// Forward and backward of one micro-batch, unit by unit: embeddings (unit 0), blocks 1..L, and
// the head (final norm, unit L+1, with the tied embedding). Each unit's gradient is handed to
// the layout as soon as it is final: the head's, each block's last to first, the embeddings'
// last (their gradient gets the head's part first). Units are joined by detached inputs, so the
// values and kernels are those of one whole-model graph.
//   Without recompute: the forward keeps every unit's graph, the backward walks them back.
//   With recompute: the forward keeps each unit's input and its dropout generator state only;
//   the backward recomputes the unit with a graph from them (one unit in memory at a time).
// Returns the micro-batch's token losses (detached, on the device): read after the last
// micro-batch, so a GPU step does not wait for the host in between.
torch::Tensor forward_backward(Layout& L, const MicroBatch& mb, torch::Generator gen,
                               Bf16Weights& w16) {
  const auto& cfg = L.config();
  const size_t last = L.units().size() - 1;
  const bool recompute = L.recompute();
  const std::vector<size_t> bf16_params = model::block_matmul_params(cfg);  // for w16
  std::vector<torch::Tensor> inputs(last), outputs(last);  // [u]: block u's input and output
  std::vector<torch::Generator> gen_at(last);              // [u]: generator before unit u
  torch::Tensor x0;  // the embedding's output (with a graph unless recomputing)
  torch::Tensor h;   // the input of the next unit
  torch::Tensor g_emb;
  {
    std::optional<torch::NoGradGuard> no_grad;
    if (recompute) no_grad.emplace();
    AutocastScope autocast(L.compute());
    model::Dropout d{cfg.dropout, true, gen};
    if (recompute) gen_at[0] = gen.clone();
    torch::Tensor p0 = L.unit_params(0);
    std::vector<torch::Tensor> emb;
    if (recompute) {
      emb = model::unit_tensors(L.specs(), L.units()[0], p0);
    } else {
      g_emb = L.unit_grad(0);
      emb = leaves(L, 0, p0, g_emb);
    }
    x0 = model::gpt_embed(cfg, emb[0], emb[1], mb.x, d);
    h = recompute ? x0 : x0.detach().requires_grad_();
    for (size_t u = 1; u < last; ++u) {
      if (recompute) gen_at[u] = gen.clone();
      inputs[u] = h;
      torch::Tensor pu = L.unit_params(u);
      auto p = recompute ? model::unit_tensors(L.specs(), L.units()[u], pu)
                         : leaves(L, u, pu, L.unit_grad(u));
      if (!recompute)  // (a forward without gradients leaves the casts to autocast)
        for (size_t i : bf16_params) p[i] = w16.leaf(u, i, p[i]);
      outputs[u] = model::gpt_block(cfg, h, p, L.mask(), d);
      h = recompute ? outputs[u] : outputs[u].detach().requires_grad_();
    }
  }

  // Head: final norm and the tied embedding.
  torch::Tensor token_losses;
  torch::Tensor grad;
  {
    if (recompute) g_emb = L.unit_grad(0);
    torch::Tensor p_lnf = L.unit_params(last), p_emb = L.unit_params(0);
    auto lnf = leaves(L, last, p_lnf, L.unit_grad(last));
    auto emb = leaves(L, 0, p_emb, g_emb);
    auto xl = recompute ? h.detach().requires_grad_() : h;
    std::optional<model::Loss> loss;
    {
      AutocastScope autocast(L.compute());
      loss = model::training_loss(
          cfg, model::gpt_head_logits(cfg, xl, lnf[0], lnf[1], w16.leaf(0, 0, emb[0])), mb.y);
    }
    loss->objective.backward();
    w16.add_grads(0);  // the head's part of wte's gradient, before the embedding's
    token_losses = loss->token_losses;
    grad = xl.grad();
    L.unit_grad_done(last);
  }
  // Blocks, last to first.
  for (size_t u = last - 1; u >= 1; --u) {
    if (recompute) {
      torch::Tensor pu = L.unit_params(u);
      auto p = leaves(L, u, pu, L.unit_grad(u));
      for (size_t i : bf16_params) p[i] = w16.leaf(u, i, p[i]);
      auto xin = inputs[u].detach().requires_grad_();
      model::Dropout d{cfg.dropout, true, gen_at[u].clone()};
      torch::Tensor out;
      {
        AutocastScope autocast(L.compute());
        out = model::gpt_block(cfg, xin, p, L.mask(), d);
      }
      out.backward(grad);
      grad = xin.grad();
    } else {
      outputs[u].backward(grad);
      grad = inputs[u].grad();
    }
    w16.add_grads(u);
    outputs[u] = inputs[u] = torch::Tensor();
    L.unit_grad_done(u);
  }
  // Embeddings.
  if (recompute) {
    torch::Tensor p0 = L.unit_params(0);
    auto emb = leaves(L, 0, p0, g_emb);
    model::Dropout d{cfg.dropout, true, gen_at[0].clone()};
    torch::Tensor out;
    {
      AutocastScope autocast(L.compute());
      out = model::gpt_embed(cfg, emb[0], emb[1], mb.x, d);
    }
    out.backward(grad);
  } else {
    x0.backward(grad);
  }
  L.unit_grad_done(0);
  return token_losses;
}

// The mean over all M micro-batches of their losses, summed in the canonical tree in index
// order (collective: one all-gather of every rank's values).
float mean_loss(const std::vector<std::pair<int64_t, double>>& mine, int64_t M,
                dist::Communicator& comm) {
  struct Value {
    int64_t index;
    double loss;
  };
  std::vector<Value> out, all(mine.size() * size_t(comm.size()));
  for (auto& [i, l] : mine) out.push_back({i, l});
  comm.all_gather_bytes(out.data(), out.size() * sizeof(Value), all.data());
  std::vector<double> by_index(static_cast<size_t>(M));
  for (auto& v : all) {
    WIT_CHECK(v.index >= 0 && v.index < M, "a rank reported the loss of micro-batch {}", v.index);
    by_index[size_t(v.index)] = v.loss;
  }
  auto sum = make_canonical_sum<double>(M, [](double& a, const double& x) { a += x; });
  for (double l : by_index) sum.push(l);
  return float(sum.result() / double(M));
}

}  // namespace

std::vector<double> loss_values(const std::vector<torch::Tensor>& token_losses) {
  if (token_losses.empty()) return {};
  std::vector<torch::Tensor> flat;
  for (const auto& t : token_losses) flat.push_back(t.reshape({-1}));
  const auto host = to_host(torch::cat(flat));
  const float* p = host.data_ptr<float>();
  std::vector<double> out;
  for (const auto& t : flat) {
    out.push_back(double(model::mean_in_order(p, t.numel())));
    p += t.numel();
  }
  return out;
}

StepRecord train_step(Layout& L, const StepContext& ctx) {
  WIT_CHECK(ctx.data, "step context without data");
  const BatchSource& data = *ctx.data;
  const int64_t M = data.micro_batches();
  OptimizerState& opt = L.optimizer();
  StepRecord rec = begin_step(data, opt.step, ctx);
  std::vector<MicroBatchWitness> witnessed;
  std::vector<torch::Tensor> token_losses;
  const std::vector<int64_t> mine = L.micro_batches_of_rank(M);
  L.begin_grads(int64_t(mine.size()), ctx.canonical_reduction);
  // Each part of the step is a user scope wit::step::<part> in libtorch's profiler (free when
  // none runs), so a profile says which part each kernel belongs to (wit_bench_step_profile).
  Bf16Weights w16(L);
  for (int64_t i : mine) {
    const PreparedMicroBatch p = [&] {
      RECORD_USER_SCOPE("wit::step::batch");
      return prepare_micro_batch(ctx, opt.step, i, witnessed, L.compute().device);
    }();
    {
      RECORD_USER_SCOPE("wit::step::forward_backward");
      L.begin_micro_batch();
      token_losses.push_back(forward_backward(L, p.batch, p.gen, w16));
    }
    RECORD_USER_SCOPE("wit::step::gradients");
    L.micro_batch_done();
  }
  w16.release();  // before the update: the copies are of this step's parameters
  {
    RECORD_USER_SCOPE("wit::step::loss");
    const std::vector<double> values = loss_values(token_losses);
    std::vector<std::pair<int64_t, double>> losses;
    for (size_t k = 0; k < mine.size(); ++k) losses.push_back({mine[k], values[k]});
    rec.loss = mean_loss(losses, M, L.comm());
  }
  torch::Tensor g;
  {
    RECORD_USER_SCOPE("wit::step::gradients");
    g = L.summed_grads();  // this rank's part, summed over every rank
    g.mul_(1.0 / double(M));
  }
  const int64_t n = L.local_count();
  {
    RECORD_USER_SCOPE("wit::step::norm_clip");
    const double norm = L.grad_norm(g);
    rec.grad_norm = float(norm);
    rec.clip_factor = clip_grads(g, n, norm, rec.hyper.grad_clip);
  }
  {
    RECORD_USER_SCOPE("wit::step::adamw");
    adamw_update(L.local_params(), g, opt.m, opt.v, n, L.local_segments(), opt.step + 1, rec.hyper,
                 L.compute().fused_optimizer());
  }
  ++opt.step;
  L.release_grads(std::move(g));
  if (ctx.witness) {
    witness::WeightSketch sketch;
    {
      RECORD_USER_SCOPE("wit::step::sketch");
      sketch = L.my_sketch();
    }
    RECORD_USER_SCOPE("wit::step::seal");
    seal_record(rec, witnessed, sketch, M, L.comm());
  }
  return rec;
}

torch::Tensor forward_logits(Layout& L, const torch::Tensor& idx) {
  torch::NoGradGuard no_grad;
  AutocastScope autocast(L.compute());
  const auto& cfg = L.config();
  model::Dropout none{0.0, false, std::nullopt};
  const size_t last = L.units().size() - 1;
  auto emb = model::unit_tensors(L.specs(), L.units()[0], L.unit_params(0));
  auto x = model::gpt_embed(cfg, emb[0], emb[1], idx, none);
  for (size_t u = 1; u < last; ++u)
    x = model::gpt_block(cfg, x, model::unit_tensors(L.specs(), L.units()[u], L.unit_params(u)),
                         L.mask(), none);
  auto lnf = model::unit_tensors(L.specs(), L.units()[last], L.unit_params(last));
  emb = model::unit_tensors(L.specs(), L.units()[0], L.unit_params(0));
  return model::gpt_head_logits(cfg, x, lnf[0], lnf[1], emb[0]);
}

}  // namespace wit
