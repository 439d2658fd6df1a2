#include "trainer/model/gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/version.h>

#include <cmath>

#include "core/error.h"
#include "trainer/model/bias_gelu.h"
#include "trainer/model/layer_norm.h"

namespace wit::model {

// ---------------------------------------------------------------------------------------------
// Parameter layout

std::vector<ParamSpec> gpt_param_specs(const GPTConfig& c) {
  std::vector<ParamSpec> specs;
  int64_t offset = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay, bool hf_t = false) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    specs.push_back({std::move(name), std::move(shape), offset, n, decay, hf_t});
    offset += n;
  };
  const int64_t C = c.n_embd;
  add("wte.weight", {c.vocab_size, C}, true);
  add("wpe.weight", {c.context, C}, true);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    std::string p = "h." + std::to_string(l) + ".";
    add(p + "ln_1.weight", {C}, false);
    add(p + "ln_1.bias", {C}, false);
    add(p + "attn.c_attn.weight", {3 * C, C}, true, true);
    add(p + "attn.c_attn.bias", {3 * C}, false);
    add(p + "attn.c_proj.weight", {C, C}, true, true);
    add(p + "attn.c_proj.bias", {C}, false);
    add(p + "ln_2.weight", {C}, false);
    add(p + "ln_2.bias", {C}, false);
    add(p + "mlp.c_fc.weight", {4 * C, C}, true, true);
    add(p + "mlp.c_fc.bias", {4 * C}, false);
    add(p + "mlp.c_proj.weight", {C, 4 * C}, true, true);
    add(p + "mlp.c_proj.bias", {C}, false);
  }
  add("ln_f.weight", {C}, false);
  add("ln_f.bias", {C}, false);
  return specs;
}

int64_t gpt_param_count(const GPTConfig& c) {
  auto specs = gpt_param_specs(c);
  return specs.back().offset + specs.back().numel;
}

double gpt_flops_per_token(const GPTConfig& c, int64_t seq_len) {
  return 6.0 * double(gpt_param_count(c)) + 12.0 * c.n_layer * seq_len * c.n_embd;
}

// ---------------------------------------------------------------------------------------------
// Initialisation

namespace {

void init_param(const GPTConfig& cfg, const ParamSpec& spec, torch::Tensor& p,
                torch::Generator& gen) {
  torch::NoGradGuard no_grad;
  const double std = 0.02, proj_std = 0.02 / std::sqrt(2.0 * double(cfg.n_layer));
  const auto& name = spec.name;
  auto ends = [&](const char* suffix) {
    std::string s(suffix);
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  if (ends("ln_1.weight") || ends("ln_2.weight") || ends("ln_f.weight"))
    p.fill_(1.0);
  else if (ends(".bias"))
    p.zero_();
  else if (ends("c_proj.weight"))
    p.normal_(0.0, proj_std, gen);
  else
    p.normal_(0.0, std, gen);
}

}  // namespace

void init_params(const GPTConfig& cfg, uint64_t seed, int64_t lo, torch::Tensor& out) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t hi = lo + out.numel();
  for (auto& s : gpt_param_specs(cfg)) {
    auto t = torch::empty(s.shape, torch::kFloat32);
    init_param(cfg, s, t, gen);  // every part of the vector advances the generator identically
    const int64_t b = std::max(lo, s.offset), e = std::min(hi, s.offset + s.numel);
    if (b < e) out.narrow(0, b - lo, e - b).copy_(t.view({-1}).narrow(0, b - s.offset, e - b));
  }
}

// ---------------------------------------------------------------------------------------------
// Units and per-unit forward pieces

std::vector<size_t> block_matmul_params(const GPTConfig& cfg) {
  if (cfg.gelu == "fused") return {2, 3, 4, 5, 8, 10, 11};
  return {2, 3, 4, 5, 8, 9, 10, 11};
}

std::vector<Unit> gpt_units(const GPTConfig& cfg) {
  const auto specs = gpt_param_specs(cfg);
  std::vector<Unit> units;
  auto add = [&](size_t first, size_t last) {
    units.push_back(
        {specs[first].offset, specs[last - 1].offset + specs[last - 1].numel, first, last});
  };
  add(0, 2);  // wte, wpe
  for (int64_t l = 0; l < cfg.n_layer; ++l) add(2 + 12 * size_t(l), 2 + 12 * size_t(l + 1));
  add(specs.size() - 2, specs.size());  // ln_f
  return units;
}

std::vector<torch::Tensor> unit_tensors(const std::vector<ParamSpec>& specs, const Unit& u,
                                        const torch::Tensor& buffer) {
  WIT_CHECK(buffer.numel() >= u.end - u.begin, "unit buffer of {} elements for a unit of {}",
            buffer.numel(), u.end - u.begin);
  std::vector<torch::Tensor> out;
  for (size_t i = u.first_spec; i < u.last_spec; ++i)
    out.push_back(buffer.narrow(0, specs[i].offset - u.begin, specs[i].numel).view(specs[i].shape));
  return out;
}

torch::Tensor Dropout::operator()(const torch::Tensor& x) {
  if (!train || p <= 0.0) return x;
  WIT_CHECK(gen.has_value(), "dropout needs the micro-batch's generator");
  // An explicit generator, never the global one: the mask is a function of the micro-batch.
  auto keep = torch::empty_like(x).bernoulli_(1.0 - p, *gen);
  return x * keep * (1.0 / (1.0 - p));
}

torch::Tensor gpt_embed(const GPTConfig& cfg, const torch::Tensor& wte, const torch::Tensor& wpe,
                        const torch::Tensor& idx, Dropout& dropout) {
  const int64_t T = idx.size(1);
  if (T > cfg.context) fail("sequence length {} exceeds the model context {}", T, cfg.context);
  auto pos = torch::arange(T, idx.options().dtype(torch::kInt64));
  return dropout(torch::embedding(wte, idx) + torch::embedding(wpe, pos));  // (B,T,C)
}

torch::Tensor gpt_block(const GPTConfig& cfg, const torch::Tensor& x_in,
                        const std::vector<torch::Tensor>& p, const torch::Tensor& causal_mask,
                        Dropout& dropout) {
  const int64_t B = x_in.size(0), T = x_in.size(1), C = cfg.n_embd, nh = cfg.n_head;
  const int64_t hd = C / nh;
  const auto &ln1w = p[0], &ln1b = p[1], &attnw = p[2], &attnb = p[3], &projw = p[4], &projb = p[5];
  const auto &ln2w = p[6], &ln2b = p[7], &fcw = p[8], &fcb = p[9], &fc2w = p[10], &fc2b = p[11];
  auto mask = causal_mask.narrow(0, 0, T).narrow(1, 0, T);
  const double scale = 1.0 / std::sqrt(double(hd));
  // attention
  auto h = layer_norm(cfg, x_in, ln1w, ln1b);
  auto qkv = torch::linear(h, attnw, attnb).split(C, 2);  // 3 x (B,T,C)
  auto q = qkv[0].view({B, T, nh, hd}).transpose(1, 2);   // (B,nh,T,hd)
  auto k = qkv[1].view({B, T, nh, hd}).transpose(1, 2);
  auto v = qkv[2].view({B, T, nh, hd}).transpose(1, 2);
  torch::Tensor y;
  if (cfg.attention == "flash") {
    // No attention dropout here: the kernel would draw its mask from the global generator, not
    // the micro-batch's (trainer/compute.cpp refuses flash with dropout > 0).
    y = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
  } else {
    auto att = torch::matmul(q, k.transpose(-2, -1)) * scale;  // (B,nh,T,T)
    att = att.masked_fill(mask, -std::numeric_limits<float>::infinity()).softmax(-1);
    att = dropout(att);
    y = torch::matmul(att, v);
  }
  y = y.transpose(1, 2).contiguous().view({B, T, C});
  // The attention's residual and the MLP's layer norm (one pass each way when fused).
  torch::Tensor x;
  std::tie(x, h) = add_layer_norm(cfg, x_in, dropout(torch::linear(y, projw, projb)), ln2w, ln2b);
  // MLP
  h = linear_gelu(cfg, h, fcw, fcb);
  return x + dropout(torch::linear(h, fc2w, fc2b));
}

torch::Tensor gpt_head_logits(const GPTConfig& cfg, const torch::Tensor& x,
                              const torch::Tensor& lnf_w, const torch::Tensor& lnf_b,
                              const torch::Tensor& wte) {
  return torch::linear(layer_norm(cfg, x, lnf_w, lnf_b), wte);  // (B,T,V)
}

Loss cross_entropy_mean(const torch::Tensor& logits, const torch::Tensor& targets) {
  auto token_loss = torch::nll_loss(logits.view({-1, logits.size(-1)}).log_softmax(-1),
                                    targets.reshape({-1}), {}, at::Reduction::None);
  // The mean's gradient is 1/n at every token whatever order the sum uses; its value is
  // re-summed in a fixed sequential order so the reported loss is thread-count independent.
  const int64_t n = token_loss.numel();
  auto objective = token_loss.sum() * (1.0 / double(n));
  return {objective, token_loss.detach().to(torch::kFloat32)};
}

float mean_in_order(const float* losses, int64_t n) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += losses[i];
  return float(total / double(n));
}

}  // namespace wit::model
