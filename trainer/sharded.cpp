#include "trainer/sharded.h"

#include <ATen/CPUGeneratorImpl.h>

#include "core/error.h"
#include "trainer/optim/adamw.h"
#include "trainer/tree_sum.h"

namespace wit {

// ---------------------------------------------------------------------------------------------
// Layout

ShardLayout ShardLayout::make(int64_t num_params, int world, int rank) {
  const int64_t C = optim::kNormChunk;
  ShardLayout l;
  l.num_params = num_params;
  l.world = world;
  l.rank = rank;
  l.shard_size = (num_params + int64_t(world) * C - 1) / (int64_t(world) * C) * C;
  l.begin = int64_t(rank) * l.shard_size;
  return l;
}

int64_t ShardLayout::owned() const {
  return std::clamp<int64_t>(num_params - begin, 0, shard_size);
}

std::vector<int64_t> ShardLayout::counts(int64_t lo, int64_t hi) const {
  std::vector<int64_t> c(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const int64_t b = std::max(lo, int64_t(r) * shard_size);
    const int64_t e = std::min(hi, int64_t(r + 1) * shard_size);
    c[size_t(r)] = std::max<int64_t>(0, e - b);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Model

ShardedGPT::ShardedGPT(const model::GPTConfig& cfg, dist::Communicator& comm)
    : cfg_(cfg),
      comm_(comm),
      layout_(ShardLayout::make(model::gpt_param_count(cfg), comm.size(), comm.rank())),
      specs_(model::gpt_param_specs(cfg)),
      units_(model::gpt_units(cfg)),
      shard_(torch::zeros({layout_.shard_size}, torch::kFloat32)),
      mask_(model::causal_mask(cfg.context)) {}

void ShardedGPT::init_weights(uint64_t seed) {
  auto gen = model::init_generator(seed);
  const int64_t lo = layout_.begin, hi = layout_.begin + layout_.shard_size;
  for (auto& s : specs_) {
    auto t = torch::empty(s.shape, torch::kFloat32);
    model::init_param(cfg_, s, t, gen);  // every rank advances the generator identically
    const int64_t b = std::max(lo, s.offset), e = std::min(hi, s.offset + s.numel);
    if (b < e) shard_.narrow(0, b - lo, e - b).copy_(t.view({-1}).narrow(0, b - s.offset, e - b));
  }
}

torch::Tensor ShardedGPT::gather_unit(size_t u) {
  const auto& unit = units_[u];
  auto counts = layout_.counts(unit.begin, unit.end);
  auto full = torch::empty({unit.end - unit.begin}, torch::kFloat32);
  const int64_t mine_from = std::max(unit.begin, layout_.begin) - layout_.begin;
  comm_.all_gather_v(shard_.data_ptr<float>() + std::max<int64_t>(0, mine_from),
                     full.data_ptr<float>(), counts);
  return full;
}

void ShardedGPT::reduce_unit_grad(size_t u, torch::Tensor& unit_grad, torch::Tensor& shard_acc) {
  const auto& unit = units_[u];
  auto counts = layout_.counts(unit.begin, unit.end);
  comm_.reduce_scatter_canonical_v(unit_grad.data_ptr<float>(), counts);
  const int64_t mine = counts[size_t(layout_.rank)];
  if (mine == 0) return;
  int64_t at = 0;  // offset of this rank's block within the unit
  for (int r = 0; r < layout_.rank; ++r) at += counts[size_t(r)];
  const int64_t dst = std::max(unit.begin, layout_.begin) - layout_.begin;
  shard_acc.narrow(0, dst, mine).copy_(unit_grad.narrow(0, at, mine));
}

torch::Tensor ShardedGPT::gather_all() {
  auto full = torch::empty({layout_.num_params}, torch::kFloat32);
  for (size_t u = 0; u < units_.size(); ++u)
    full.narrow(0, units_[u].begin, units_[u].end - units_[u].begin).copy_(gather_unit(u));
  return full;
}

torch::Tensor ShardedGPT::logits(const torch::Tensor& idx) {
  torch::NoGradGuard no_grad;
  model::Dropout none{0.0, false, std::nullopt};
  const size_t last = units_.size() - 1;
  auto emb = model::unit_tensors(specs_, units_[0], gather_unit(0));
  auto x = model::gpt_embed(cfg_, emb[0], emb[1], idx, none);
  for (size_t u = 1; u < last; ++u)
    x = model::gpt_block(cfg_, x, model::unit_tensors(specs_, units_[u], gather_unit(u)), mask_,
                         none);
  auto lnf = model::unit_tensors(specs_, units_[last], gather_unit(last));
  emb = model::unit_tensors(specs_, units_[0], gather_unit(0));
  return model::gpt_head_logits(cfg_, x, lnf[0], lnf[1], emb[0]);
}

float ShardedGPT::evaluate(const data::TokenStream& val, int64_t T, int64_t b, int64_t batches) {
  torch::NoGradGuard no_grad;
  double total = 0.0;
  for (int64_t k = 0; k < batches; ++k) {
    const MicroBatch mb = to_micro_batch(eval_batch_tokens(val, T, b, k), b, T);
    total += double(model::cross_entropy_mean(logits(mb.x), mb.y).value);
  }
  return float(total / double(batches));
}

// ---------------------------------------------------------------------------------------------
// The step

namespace {

// Leaves for the unit's parameters whose gradients land in `grad` (zeroed, unit-sized).
std::vector<torch::Tensor> leaves(const ShardedGPT& m, size_t u, const torch::Tensor& params,
                                  torch::Tensor& grad) {
  auto views = model::unit_tensors(m.specs(), m.units()[u], params);
  auto grads = model::unit_tensors(m.specs(), m.units()[u], grad);
  for (size_t i = 0; i < views.size(); ++i) {
    views[i] = views[i].detach().requires_grad_();
    views[i].mutable_grad() = grads[i];
  }
  return views;
}

torch::Tensor zeros_like_unit(const model::Unit& u) {
  return torch::zeros({u.end - u.begin}, torch::kFloat32);
}

}  // namespace

StepRecord train_step_sharded(ShardedGPT& model, OptimizerState& opt, const StepContext& ctx,
                              GradientPool& pool) {
  WIT_CHECK(ctx.data && ctx.comm, "sharded step needs data and a communicator");
  const BatchSource& data = *ctx.data;
  dist::Communicator& comm = *ctx.comm;
  const auto& cfg = model.config();
  const int64_t M = data.micro_batches();
  const int64_t N = comm.size(), rounds = M / N;
  const size_t last = model.units().size() - 1;
  StepRecord rec = begin_step(data, opt.step, ctx);
  std::vector<MicroBatchWitness> witnessed;

  auto round_sum = make_canonical_sum<torch::Tensor>(
      rounds, [&pool](torch::Tensor& acc, const torch::Tensor& x) {
        acc.add_(x);
        pool.give(x);
      });
  std::vector<double> my_losses;
  for (int64_t j = 0; j < rounds; ++j) {
    const int64_t i = j * N + comm.rank();
    auto [mb, gen] = prepare_micro_batch(ctx, opt.step, i, witnessed);
    torch::Tensor acc = pool.take();

    // Forward without a graph, keeping each unit's input and the generator at its start.
    std::vector<torch::Tensor> inputs;     // inputs[u]: input of block unit u (u >= 1)
    std::vector<torch::Generator> gen_at;  // gen_at[u]: generator before unit u
    torch::Tensor x;
    {
      torch::NoGradGuard no_grad;
      gen_at.push_back(gen.clone());
      model::Dropout d{cfg.dropout, true, gen};
      auto emb = model::unit_tensors(model.specs(), model.units()[0], model.gather_unit(0));
      x = model::gpt_embed(cfg, emb[0], emb[1], mb.x, d);
      inputs.push_back(torch::Tensor());
      for (size_t u = 1; u < last; ++u) {
        gen_at.push_back(gen.clone());
        inputs.push_back(x);
        auto p = model::unit_tensors(model.specs(), model.units()[u], model.gather_unit(u));
        x = model::gpt_block(cfg, x, p, model.mask(), d);
      }
    }

    // Head: final norm and the tied embedding; the embedding unit's gradient stays open until
    // the embedding's own backward adds its part.
    torch::Tensor g_emb = zeros_like_unit(model.units()[0]);
    torch::Tensor grad_x;
    {
      torch::Tensor g_lnf = zeros_like_unit(model.units()[last]);
      torch::Tensor p_lnf = model.gather_unit(last), p_emb = model.gather_unit(0);
      auto lnf = leaves(model, last, p_lnf, g_lnf);
      auto emb = leaves(model, 0, p_emb, g_emb);
      auto xl = x.detach().requires_grad_();
      auto loss =
          model::cross_entropy_mean(model::gpt_head_logits(cfg, xl, lnf[0], lnf[1], emb[0]), mb.y);
      loss.objective.backward();
      my_losses.push_back(double(loss.value));
      grad_x = xl.grad();
      model.reduce_unit_grad(last, g_lnf, acc);
    }
    // Blocks, last to first: recompute with a graph, backward, reduce-scatter, free.
    for (size_t u = last - 1; u >= 1; --u) {
      torch::Tensor g_unit = zeros_like_unit(model.units()[u]);
      torch::Tensor p_unit = model.gather_unit(u);
      auto p = leaves(model, u, p_unit, g_unit);
      auto xin = inputs[u].detach().requires_grad_();
      model::Dropout d{cfg.dropout, true, gen_at[u].clone()};
      model::gpt_block(cfg, xin, p, model.mask(), d).backward(grad_x);
      grad_x = xin.grad();
      model.reduce_unit_grad(u, g_unit, acc);
    }
    // Embeddings.
    {
      torch::Tensor p_emb = model.gather_unit(0);
      auto emb = leaves(model, 0, p_emb, g_emb);
      model::Dropout d{cfg.dropout, true, gen_at[0].clone()};
      model::gpt_embed(cfg, emb[0], emb[1], mb.x, d).backward(grad_x);
      model.reduce_unit_grad(0, g_emb, acc);
    }
    round_sum.push(std::move(acc));
  }

  // Loss: every micro-batch's value in index order, summed in the canonical tree.
  std::vector<double> all(static_cast<size_t>(M));
  {
    std::vector<double> gathered(static_cast<size_t>(M));
    comm.all_gather_bytes(my_losses.data(), my_losses.size() * sizeof(double), gathered.data());
    for (int64_t r = 0; r < N; ++r)
      for (int64_t j = 0; j < rounds; ++j)
        all[size_t(j * N + r)] = gathered[size_t(r * rounds + j)];
  }
  auto loss_sum = make_canonical_sum<double>(M, [](double& a, const double& x) { a += x; });
  for (double l : all) loss_sum.push(l);
  rec.loss = float(loss_sum.result() / double(M));

  torch::Tensor g = round_sum.result();  // this rank's shard of the summed gradient
  const ShardLayout& L = model.layout();
  g.mul_(1.0 / double(M));
  // Norm: this shard's chunk partials, gathered in rank (= chunk) order.
  auto mine = optim::grad_norm_partials(g.data_ptr<float>(), L.shard_size);
  std::vector<double> partials(mine.size() * size_t(N));
  comm.all_gather_bytes(mine.data(), mine.size() * sizeof(double), partials.data());
  std::vector<optim::DecaySegment> segs;
  for (auto s : decay_segments_of(model.specs()))
    segs.push_back({s.begin - L.begin, s.end - L.begin, s.decay});
  float* shard = model.params_shard().data_ptr<float>();
  finish_step(rec, optim::norm_from_partials(partials), g.data_ptr<float>(), L.owned(), shard, opt,
              segs);
  pool.give(std::move(g));
  if (ctx.witness)
    seal_record(rec, witnessed, witness::sketch_weights(shard, L.begin, L.owned()), M, comm);
  return rec;
}

}  // namespace wit
