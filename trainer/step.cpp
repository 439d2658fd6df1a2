#include "trainer/step.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <functional>

#include "core/error.h"
#include "trainer/bucket_reducer.h"
#include "trainer/tree_sum.h"

namespace wit {

OptimizerState OptimizerState::zeros(int64_t n) {
  return {torch::zeros({n}, torch::kFloat32), torch::zeros({n}, torch::kFloat32), 0};
}

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

torch::Tensor GradientPool::take() {
  if (free_.empty()) return torch::zeros({n_}, torch::kFloat32);
  auto t = std::move(free_.back());
  free_.pop_back();
  t.zero_();
  return t;
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

namespace {

// Forward and backward of one micro-batch unit by unit (embeddings, blocks, final norm), each
// unit's graph joined to the next by a detached input, so that `unit_done(u)` can be called as
// soon as unit u's gradients are final. The same kernels on the same values as GPT::loss, so the
// same gradient bits; gradients land where model.bind_grads put them.
model::Loss backward_by_unit(model::GPT& model, const MicroBatch& mb, torch::Generator gen,
                             const std::function<void(const model::Unit&)>& unit_done) {
  const auto& cfg = model.config();
  const auto& p = model.params();
  const auto units = model::gpt_units(cfg);
  const size_t last = units.size() - 1;
  model::Dropout dropout{cfg.dropout, true, std::move(gen)};
  auto x0 = model::gpt_embed(cfg, p[0], p[1], mb.x, dropout);
  std::vector<torch::Tensor> inputs, outputs;
  auto h = x0.detach().requires_grad_();
  for (size_t u = 1; u < last; ++u) {
    inputs.push_back(h);
    std::vector<torch::Tensor> unit(p.begin() + long(units[u].first_spec),
                                    p.begin() + long(units[u].last_spec));
    outputs.push_back(model::gpt_block(cfg, h, unit, model.mask(), dropout));
    h = outputs.back().detach().requires_grad_();
  }
  const size_t n = p.size();
  auto loss =
      model::cross_entropy_mean(model::gpt_head_logits(cfg, h, p[n - 2], p[n - 1], p[0]), mb.y);
  loss.objective.backward();
  unit_done(units[last]);
  torch::Tensor g = h.grad();
  for (size_t u = last - 1; u >= 1; --u) {
    outputs[u - 1].backward(g);
    g = inputs[u - 1].grad();
    unit_done(units[u]);
  }
  x0.backward(g);
  unit_done(units[0]);
  return loss;
}

}  // namespace

StepRecord begin_step(const BatchSource& data, int64_t step, const StepContext& ctx) {
  StepRecord rec;
  rec.step = step;
  rec.tokens = data.micro_batches() * data.micro_batch_size() * data.seq_len();
  rec.hyper = optim::hyper_at(ctx.optim, step, ctx.total_steps);
  return rec;
}

PreparedMicroBatch prepare_micro_batch(const StepContext& ctx, int64_t step, int64_t micro,
                                       std::vector<MicroBatchWitness>& witnessed) {
  const BatchSource& data = *ctx.data;
  const auto tokens = data.micro_batch_tokens(step, micro);
  const uint64_t seed = micro_batch_seed(ctx.run_seed, step, micro);
  if (ctx.witness)
    witnessed.push_back({micro, witness::micro_batch_hash(tokens.data(), tokens.size()), seed});
  return {to_micro_batch(tokens, data.micro_batch_size(), data.seq_len()),
          at::make_generator<at::CPUGeneratorImpl>(seed)};
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

witness::ProbeFields probe_outputs(const torch::Tensor& logits, const torch::Tensor& y,
                                   int64_t steps_done) {
  torch::NoGradGuard no_grad;
  const int64_t S = y.size(0), T = y.size(1);
  auto logp = torch::log_softmax(logits, -1).gather(-1, y.unsqueeze(-1)).squeeze(-1).contiguous();
  auto argmax = logits.argmax(-1).to(torch::kInt64).contiguous();
  const float* lp = logp.data_ptr<float>();
  const int64_t* am = argmax.data_ptr<int64_t>();
  witness::ProbeFields f;
  f.step = uint64_t(steps_done);
  for (int64_t s = 0; s < S; ++s) {
    double sum = 0;  // left to right: a fixed order whatever the thread count
    for (int64_t t = 0; t < T; ++t) sum += double(lp[s * T + t]);
    f.mean_logprob.push_back(float(sum / double(T)));
  }
  std::vector<uint16_t> tokens(am, am + S * T);
  f.argmax_digest = witness::probe_argmax_digest(tokens);
  return f;
}

void finish_step(StepRecord& rec, double grad_norm, float* g, int64_t n, float* params,
                 OptimizerState& opt, const std::vector<optim::DecaySegment>& segments) {
  rec.grad_norm = float(grad_norm);
  rec.clip_factor = optim::clip_grads(g, n, grad_norm, rec.hyper.grad_clip);
  optim::adamw_update(params, g, opt.m.data_ptr<float>(), opt.v.data_ptr<float>(), n, segments,
                      opt.step + 1, rec.hyper);
  ++opt.step;
}

StepRecord train_step(model::GPT& model, OptimizerState& opt, const StepContext& ctx,
                      GradientPool& pool) {
  WIT_CHECK(ctx.data, "step context without data");
  const BatchSource& data = *ctx.data;
  const int64_t M = data.micro_batches();
  auto single = dist::make_single_process();
  dist::Communicator& comm = ctx.comm ? *ctx.comm : *single;
  const int64_t N = comm.size(), B = M / N, first = comm.rank() * B;
  WIT_CHECK(M % N == 0, "{} micro-batches over {} ranks", M, N);
  StepRecord rec = begin_step(data, opt.step, ctx);
  std::vector<MicroBatchWitness> witnessed;

  bool arithmetic = true;  // off while the sum only does its bookkeeping (see below)
  auto add_grads = [&pool, &arithmetic](torch::Tensor& acc, const torch::Tensor& x) {
    if (arithmetic) acc.add_(x);
    pool.give(x);
  };
  auto grad_sum = make_canonical_sum<torch::Tensor>(B, add_grads);
  auto loss_sum = make_canonical_sum<double>(B, [](double& acc, const double& x) { acc += x; });
  // This rank's aligned block of micro-batches: a subtree of the canonical tree.
  for (int64_t i = first; i < first + B; ++i) {
    auto [mb, gen] = prepare_micro_batch(ctx, opt.step, i, witnessed);
    torch::Tensor grad = pool.take();
    model.bind_grads(grad);
    if (N == 1 || i + 1 < first + B) {
      auto loss = model.loss(mb.x, mb.y, /*train=*/true, gen);
      loss.objective.backward();
      grad_sum.push(std::move(grad));
      loss_sum.push(double(loss.value));
      continue;
    }
    // The last micro-batch with several ranks: as each unit's gradient becomes final, finish
    // the local tree on that slice and hand it to the reducer, which sums it over ranks while
    // the backward of the units before it goes on. Buckets are units, posted last to first.
    BucketReducer reducer(comm, ctx.canonical_reduction);
    auto loss = backward_by_unit(model, mb, gen, [&](const model::Unit& u) {
      auto slice = [&](const torch::Tensor& t) { return t.narrow(0, u.begin, u.end - u.begin); };
      auto part = grad_sum.map(slice, [](torch::Tensor& a, const torch::Tensor& x) { a.add_(x); });
      part.push(slice(grad));
      reducer.post(part.result());
    });
    reducer.wait();
    loss_sum.push(double(loss.value));
    // Every slice is summed already: this push only moves the buffers through the same tree.
    arithmetic = false;
    grad_sum.push(std::move(grad));
    arithmetic = true;
  }
  rec.loss = float(dist::sum_canonical(comm, loss_sum.result()) / double(M));

  torch::Tensor g = grad_sum.result();  // with several ranks, already summed over them
  const int64_t P = model.num_params();
  g.narrow(0, 0, P).mul_(1.0 / double(M));
  float* gp = g.data_ptr<float>();
  float* params = model.flat_params().data_ptr<float>();
  finish_step(rec, optim::grad_norm(gp, P), gp, P, params, opt, decay_segments(model));
  pool.give(std::move(g));
  if (ctx.witness) {
    // Each rank sketches its slice of the (replicated) parameters; the sum is the whole sketch.
    const auto [lo, hi] = sketch_slice(P, comm.rank(), comm.size());
    seal_record(rec, witnessed, witness::sketch_weights(params + lo, lo, hi - lo), M, comm);
  }
  return rec;
}

float evaluate(model::GPT& model, const data::TokenStream& val, int64_t T, int64_t b,
               int64_t batches) {
  torch::NoGradGuard no_grad;
  double total = 0.0;
  for (int64_t k = 0; k < batches; ++k) {
    const MicroBatch mb = to_micro_batch(eval_batch_tokens(val, T, b, k), b, T);
    total += double(model.loss(mb.x, mb.y, /*train=*/false).value);
  }
  return float(total / double(batches));
}

}  // namespace wit
