#include "trainer/model/gpt.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "core/error.h"

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
// Construction and initialisation

GPT::GPT(const GPTConfig& cfg) : cfg_(cfg), specs_(gpt_param_specs(cfg)) {
  WIT_CHECK(cfg.n_embd % cfg.n_head == 0, "n_embd {} not divisible by n_head {}", cfg.n_embd,
            cfg.n_head);
  flat_ = torch::empty({gpt_param_count(cfg)}, torch::kFloat32);
  for (auto& s : specs_)
    params_.push_back(flat_.narrow(0, s.offset, s.numel).view(s.shape).detach().requires_grad_());
  causal_mask_ = torch::ones({cfg.context, cfg.context}, torch::kBool).triu(1);
}

void GPT::init_weights(uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const double std = 0.02, proj_std = 0.02 / std::sqrt(2.0 * double(cfg_.n_layer));
  for (size_t i = 0; i < specs_.size(); ++i) {
    const auto& name = specs_[i].name;
    auto& p = params_[i];
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
}

void GPT::bind_grads(torch::Tensor& flat_grad) {
  WIT_CHECK(flat_grad.numel() >= flat_.numel(), "gradient buffer has {} elements, model {}",
            flat_grad.numel(), flat_.numel());
  for (size_t i = 0; i < specs_.size(); ++i)
    params_[i].mutable_grad() =
        flat_grad.narrow(0, specs_[i].offset, specs_[i].numel).view(specs_[i].shape);
}

// ---------------------------------------------------------------------------------------------
// Forward

torch::Tensor GPT::dropout(const torch::Tensor& x, bool train,
                           std::optional<torch::Generator>& gen) {
  if (!train || cfg_.dropout <= 0.0) return x;
  WIT_CHECK(gen.has_value(), "dropout needs the micro-batch's generator");
  // An explicit generator, never the global one: the mask is a function of the micro-batch.
  auto keep = torch::empty_like(x).bernoulli_(1.0 - cfg_.dropout, *gen);
  return x * keep * (1.0 / (1.0 - cfg_.dropout));
}

torch::Tensor GPT::forward_hidden(const torch::Tensor& idx, bool train,
                                  std::optional<torch::Generator>& gen) {
  const int64_t B = idx.size(0), T = idx.size(1), C = cfg_.n_embd, nh = cfg_.n_head;
  const int64_t hd = C / nh;
  if (T > cfg_.context) fail("sequence length {} exceeds the model context {}", T, cfg_.context);
  size_t k = 0;
  auto next = [&]() -> torch::Tensor& { return params_[k++]; };
  auto& wte = next();
  auto& wpe = next();
  auto pos = torch::arange(T, torch::kInt64);
  auto x = torch::embedding(wte, idx) + torch::embedding(wpe, pos);  // (B,T,C)
  x = dropout(x, train, gen);
  auto mask = causal_mask_.narrow(0, 0, T).narrow(1, 0, T);
  const double scale = 1.0 / std::sqrt(double(hd));
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    auto &ln1w = next(), &ln1b = next(), &attnw = next(), &attnb = next();
    auto &projw = next(), &projb = next(), &ln2w = next(), &ln2b = next();
    auto &fcw = next(), &fcb = next(), &fc2w = next(), &fc2b = next();
    // attention
    auto h = torch::layer_norm(x, {C}, ln1w, ln1b, 1e-5);
    auto qkv = torch::linear(h, attnw, attnb).split(C, 2);  // 3 x (B,T,C)
    auto q = qkv[0].view({B, T, nh, hd}).transpose(1, 2);   // (B,nh,T,hd)
    auto kk = qkv[1].view({B, T, nh, hd}).transpose(1, 2);
    auto v = qkv[2].view({B, T, nh, hd}).transpose(1, 2);
    auto att = torch::matmul(q, kk.transpose(-2, -1)) * scale;  // (B,nh,T,T)
    att = att.masked_fill(mask, -std::numeric_limits<float>::infinity()).softmax(-1);
    att = dropout(att, train, gen);
    auto y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
    x = x + dropout(torch::linear(y, projw, projb), train, gen);
    // MLP
    h = torch::layer_norm(x, {C}, ln2w, ln2b, 1e-5);
    h = torch::gelu(torch::linear(h, fcw, fcb), "tanh");
    x = x + dropout(torch::linear(h, fc2w, fc2b), train, gen);
  }
  auto &lnfw = next(), &lnfb = next();
  return torch::layer_norm(x, {C}, lnfw, lnfb, 1e-5);
}

torch::Tensor GPT::logits(const torch::Tensor& idx) {
  std::optional<torch::Generator> none;
  return torch::linear(forward_hidden(idx, false, none), params_[0]);
}

Loss GPT::loss(const torch::Tensor& idx, const torch::Tensor& targets, bool train,
               std::optional<torch::Generator> gen) {
  auto h = forward_hidden(idx, train, gen);
  auto logits = torch::linear(h, params_[0]);  // tied head: (B,T,V)
  auto token_loss = torch::nll_loss(logits.view({-1, cfg_.vocab_size}).log_softmax(-1),
                                    targets.reshape({-1}), {}, at::Reduction::None);
  // The mean's gradient is 1/n at every token whatever order the sum uses; its value is
  // re-summed in a fixed sequential order so the reported loss is thread-count independent.
  const int64_t n = token_loss.numel();
  auto objective = token_loss.sum() * (1.0 / double(n));
  auto values = token_loss.detach().contiguous();
  const float* p = values.data_ptr<float>();
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += p[i];
  return {objective, float(total / double(n))};
}

}  // namespace wit::model
