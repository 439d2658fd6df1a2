// Generation: the KV-cached forward gives the full forward's logits, sampling is a function of
// the seed, greedy is the argmax, the cache restarts past the context, and bad options are
// refused.
#include "trainer/generate.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "trainer/model/gpt.h"

namespace wit {
namespace {

model::GPTConfig small() { return model::GPTConfig{2, 2, 16, 40, 12, 0.0}; }

torch::Tensor params_of(const model::GPTConfig& cfg, uint64_t seed) {
  torch::Tensor p = torch::empty({model::gpt_param_count(cfg)}, torch::kFloat32);
  model::init_params(cfg, seed, 0, p);
  return p;
}

// The training forward (eval mode) over the whole sequence: logits after its last token.
torch::Tensor full_forward_last(const model::GPTConfig& cfg, const torch::Tensor& params,
                                const std::vector<uint16_t>& tokens) {
  torch::NoGradGuard no_grad;
  const auto specs = model::gpt_param_specs(cfg);
  const auto units = model::gpt_units(cfg);
  auto unit = [&](size_t u) {
    return model::unit_tensors(specs, units[u],
                               params.narrow(0, units[u].begin, units[u].end - units[u].begin));
  };
  std::vector<int64_t> ids(tokens.begin(), tokens.end());
  model::Dropout off;
  const auto emb = unit(0);
  auto x = model::gpt_embed(cfg, emb[0], emb[1], torch::tensor(ids).unsqueeze(0), off);
  const auto mask = model::causal_mask(cfg.context);
  for (int64_t l = 0; l < cfg.n_layer; ++l) x = model::gpt_block(cfg, x, unit(size_t(1 + l)), mask, off);
  const auto lnf = unit(units.size() - 1);
  return model::gpt_head_logits(cfg, x, lnf[0], lnf[1], emb[0]).select(1, int64_t(ids.size()) - 1).squeeze(0);
}

TEST(Generate, TheCachedForwardGivesTheFullForwardsLogits) {
  const auto cfg = small();
  const auto params = params_of(cfg, 3);
  // Greedy: each drawn token is the argmax of the full forward over everything before it.
  SampleOptions o;
  o.tokens = 8;
  o.temperature = 0;
  Sampler s(cfg, params);
  const std::vector<uint16_t> prompt = {1, 7, 3};
  const std::vector<uint16_t> drawn = s.generate(prompt, o, [](uint16_t) { return true; });
  ASSERT_EQ(drawn.size(), 8u);
  std::vector<uint16_t> seq = prompt;
  for (uint16_t t : drawn) {
    const torch::Tensor full = full_forward_last(cfg, params, seq);
    EXPECT_EQ(full.argmax().item<int64_t>(), t);
    seq.push_back(t);
  }
}

TEST(Generate, DrawsAreAFunctionOfTheSeed) {
  const auto cfg = small();
  const auto params = params_of(cfg, 5);
  SampleOptions o;
  o.tokens = 30;  // past the context of 12: the cache restarts along the way
  auto run = [&](uint64_t seed) {
    o.seed = seed;
    return Sampler(cfg, params).generate({2}, o, [](uint16_t) { return true; });
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
  EXPECT_EQ(run(1).size(), 30u);
  // top-k 1 is greedy whatever the temperature.
  o.top_k = 1;
  o.seed = 9;
  const auto top1 = Sampler(cfg, params).generate({2}, o, [](uint16_t) { return true; });
  o.top_k = 0;
  o.temperature = 0;
  EXPECT_EQ(top1, Sampler(cfg, params).generate({2}, o, [](uint16_t) { return true; }));
}

TEST(Generate, StopsAtTheStopTokenAndWhenToldTo) {
  const auto cfg = small();
  Sampler s(cfg, params_of(cfg, 1));
  SampleOptions o;
  o.tokens = 50;
  o.temperature = 0;
  const auto greedy = s.generate({4}, o, [](uint16_t) { return true; });
  o.stop_token = greedy[3];
  const auto stopped = s.generate({4}, o, [](uint16_t) { return true; });
  EXPECT_EQ(stopped.back(), greedy[3]);
  EXPECT_LE(stopped.size(), 4u);
  int seen = 0;
  o.stop_token = -1;
  EXPECT_EQ(s.generate({4}, o, [&](uint16_t) { return ++seen < 5; }).size(), 5u);
}

TEST(Generate, BadOptionsAndPromptsAreRefused) {
  const auto cfg = small();
  Sampler s(cfg, params_of(cfg, 1));
  SampleOptions o;
  auto error = [&](const std::vector<uint16_t>& prompt) {
    try {
      s.generate(prompt, o, [](uint16_t) { return true; });
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(std::vector<uint16_t>(13, 1)).find("longer than the model's context of 12"),
            std::string::npos);
  EXPECT_NE(error({}).find("no tokens"), std::string::npos);
  o.temperature = -1;
  EXPECT_NE(error({1}).find("--temperature"), std::string::npos);
  o.temperature = 1;
  o.top_k = 41;
  EXPECT_NE(error({1}).find("--top-k 41"), std::string::npos);
  o.top_k = 0;
  o.tokens = 0;
  EXPECT_NE(error({1}).find("--tokens 0"), std::string::npos);
}

}  // namespace
}  // namespace wit
