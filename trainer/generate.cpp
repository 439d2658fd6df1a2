#include "trainer/generate.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>

#include "core/error.h"

namespace wit {

void check_sample_options(const SampleOptions& o, const model::GPTConfig& cfg) {
  if (o.tokens < 1 || o.tokens > 1'000'000)
    fail("--tokens {}: generate 1 to 1,000,000 tokens", o.tokens);
  if (!(o.temperature >= 0.0 && o.temperature <= 100.0))
    fail("--temperature {}: expected 0 (greedy) to 100", o.temperature);
  if (o.vocab < 0 || o.vocab > cfg.vocab_size)
    fail("a tokenizer of {} tokens for a model of {}", o.vocab, cfg.vocab_size);
  if (o.top_k < 0 || o.top_k > cfg.vocab_size)
    fail("--top-k {}: expected 0 (the whole vocabulary) to the vocabulary size {}", o.top_k,
         cfg.vocab_size);
}

Sampler::Sampler(const model::GPTConfig& cfg, torch::Tensor flat_params)
    : cfg_(cfg),
      params_(flat_params.to(torch::kCPU, torch::kFloat32).contiguous()),
      specs_(model::gpt_param_specs(cfg)),
      units_(model::gpt_units(cfg)),
      k_(size_t(cfg.n_layer)),
      v_(size_t(cfg.n_layer)) {
  WIT_CHECK(params_.numel() == model::gpt_param_count(cfg), "{} parameters for a model of {}",
            params_.numel(), model::gpt_param_count(cfg));
}

torch::Tensor Sampler::feed(const std::vector<uint16_t>& tokens) {
  torch::NoGradGuard no_grad;
  const int64_t n = int64_t(tokens.size()), C = cfg_.n_embd, nh = cfg_.n_head, hd = C / nh;
  WIT_CHECK(length_ + n <= cfg_.context, "{} + {} positions past the context {}", length_, n,
            cfg_.context);
  auto unit = [&](size_t u) {
    return model::unit_tensors(specs_, units_[u],
                               params_.narrow(0, units_[u].begin, units_[u].end - units_[u].begin));
  };
  std::vector<int64_t> ids(tokens.begin(), tokens.end());
  auto idx = torch::tensor(ids, torch::kInt64);
  const auto emb = unit(0);
  auto pos = torch::arange(length_, length_ + n, torch::kInt64);
  auto x = (torch::embedding(emb[0], idx) + torch::embedding(emb[1], pos)).unsqueeze(0);  // (1,n,C)
  // New position i (absolute length_ + i) sees every position up to itself.
  auto mask = torch::ones({n, length_ + n}, torch::kBool).triu(length_ + 1);
  const double scale = 1.0 / std::sqrt(double(hd));
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    const auto p = unit(size_t(1 + l));
    auto h = torch::layer_norm(x, {C}, p[0], p[1], 1e-5);
    auto qkv = torch::linear(h, p[2], p[3]).split(C, 2);
    auto q = qkv[0].view({1, n, nh, hd}).transpose(1, 2);
    auto k = qkv[1].view({1, n, nh, hd}).transpose(1, 2);
    auto v = qkv[2].view({1, n, nh, hd}).transpose(1, 2);
    auto& kc = k_[size_t(l)];
    auto& vc = v_[size_t(l)];
    kc = kc.defined() ? torch::cat({kc, k}, 2) : k;
    vc = vc.defined() ? torch::cat({vc, v}, 2) : v;
    auto att = torch::matmul(q, kc.transpose(-2, -1)) * scale;  // (1,nh,n,length+n)
    att = att.masked_fill(mask, -std::numeric_limits<float>::infinity()).softmax(-1);
    auto y = torch::matmul(att, vc).transpose(1, 2).contiguous().view({1, n, C});
    x = x + torch::linear(y, p[4], p[5]);
    h = torch::layer_norm(x, {C}, p[6], p[7], 1e-5);
    x = x + torch::linear(torch::gelu(torch::linear(h, p[8], p[9]), "tanh"), p[10], p[11]);
  }
  length_ += n;
  const auto lnf = unit(units_.size() - 1);
  auto last = x.select(1, n - 1);  // (1,C)
  return model::gpt_head_logits(cfg_, last, lnf[0], lnf[1], emb[0]).squeeze(0);  // (V)
}

torch::Tensor Sampler::next_logits(const std::vector<uint16_t>& prompt) {
  if (prompt.empty()) fail("the prompt has no tokens");
  if (int64_t(prompt.size()) > cfg_.context)
    fail("the prompt is {} tokens, longer than the model's context of {}: shorten it",
         prompt.size(), cfg_.context);
  torch::NoGradGuard no_grad;
  reset();
  return feed(prompt).to(torch::kCPU, torch::kFloat32).contiguous();
}

std::vector<uint16_t> Sampler::generate(const std::vector<uint16_t>& prompt, const SampleOptions& o,
                                        const std::function<bool(uint16_t)>& emit) {
  check_sample_options(o, cfg_);
  if (prompt.empty()) fail("the prompt has no tokens");
  if (int64_t(prompt.size()) > cfg_.context)
    fail("the prompt is {} tokens, longer than the model's context of {}: shorten it",
         prompt.size(), cfg_.context);
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);
  reset();
  std::vector<uint16_t> seen = prompt, drawn;
  torch::Tensor logits = feed(prompt);
  for (int64_t i = 0; i < o.tokens; ++i) {
    // Only the first vocab_size logits are tokens (a config may pad the vocabulary).
    torch::Tensor l = logits.narrow(0, 0, o.vocab > 0 ? o.vocab : logits.numel()).to(torch::kFloat64);
    int64_t next = 0;
    if (o.temperature == 0.0) {
      next = l.argmax().item<int64_t>();
    } else {
      l = l / o.temperature;
      if (o.top_k > 0 && o.top_k < l.numel()) {
        const double kth = std::get<0>(l.topk(o.top_k)).min().item<double>();
        l = l.masked_fill(l < kth, -std::numeric_limits<double>::infinity());
      }
      next = torch::multinomial(l.softmax(-1), 1, false, gen).item<int64_t>();
    }
    const auto token = uint16_t(next);
    drawn.push_back(token);
    seen.push_back(token);
    if (!emit(token) || next == o.stop_token) break;
    if (i + 1 == o.tokens) break;
    if (length_ == cfg_.context) {  // restart the cache from the recent half of the context
      reset();
      const size_t keep = size_t(std::max<int64_t>(1, cfg_.context / 2));
      logits = feed(std::vector<uint16_t>(seen.end() - std::ptrdiff_t(keep), seen.end()));
    } else {
      logits = feed({token});
    }
  }
  return drawn;
}

}  // namespace wit
