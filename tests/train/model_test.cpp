// The model's parameter layout and counts, and the summation order of a step.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/config.h"
#include "trainer/layout.h"
#include "trainer/model/gpt.h"
#include "trainer/step.h"
#include "record/run_config.h"
#include "trainer/tree_sum.h"

namespace wit {
namespace {

model::GPTConfig config_file_model(const std::string& name) {
  const auto path = std::filesystem::path(WIT_SOURCE_DIR) / "configs" / (name + ".yaml");
  return run_config_from(config::Config::load(path, run_schema())).model;
}

TEST(ParamCount, EveryShippedConfigHasItsPublishedSize) {
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"gpt2-124m", 124'439'808},   {"gpt2-350m", 354'823'168}, {"gpt2-774m", 774'030'080},
      {"gpt2-1.5b", 1'557'611'200}, {"gpt-2b", 2'119'358'464},  {"tiny", 3'290'880},
      {"gpt2-124m-kjv", 124'439'808}};
  for (auto& [name, count] : expected) {
    auto cfg = config_file_model(name);
    EXPECT_EQ(model::gpt_param_count(cfg), count) << name;
    // A layout really allocates that many (uninitialised: cheap even at 2B).
    auto single = dist::make_single_process();
    auto layout = make_layout("ddp", cfg, 1, *single);
    EXPECT_EQ(layout->local_params().numel(), count) << name;
  }
}

TEST(ParamCount, LayoutIsContiguousAndUsesHuggingFaceNames) {
  model::GPTConfig cfg{2, 2, 8, 11, 16, 0.0};
  auto specs = model::gpt_param_specs(cfg);
  ASSERT_EQ(specs.size(), 2u + 12u * 2u + 2u);
  int64_t off = 0;
  for (auto& s : specs) {
    EXPECT_EQ(s.offset, off) << s.name;
    off += s.numel;
  }
  EXPECT_EQ(specs[0].name, "wte.weight");
  EXPECT_EQ(specs[4].name, "h.0.attn.c_attn.weight");
  EXPECT_TRUE(specs[4].hf_transposed);
  EXPECT_TRUE(specs[4].decay);
  EXPECT_FALSE(specs[5].decay);  // bias
  EXPECT_EQ(specs.back().name, "ln_f.bias");
}

TEST(Model, InitIsDeterministicAndSeedSensitive) {
  model::GPTConfig cfg{2, 2, 16, 11, 16, 0.0};
  const int64_t P = model::gpt_param_count(cfg);
  torch::Tensor a = torch::empty({P}), b = torch::empty({P}), c = torch::empty({P});
  model::init_params(cfg, 7, 0, a);
  model::init_params(cfg, 7, 0, b);
  model::init_params(cfg, 8, 0, c);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, c));
  // Any part of the vector drawn alone holds the same values (how fsdp ranks initialise).
  torch::Tensor part = torch::empty({P / 3});
  model::init_params(cfg, 7, P / 2, part);
  EXPECT_TRUE(torch::equal(part, a.narrow(0, P / 2, P / 3)));
}

TEST(Model, UntrainedLossIsNearUniform) {
  model::GPTConfig cfg{2, 2, 32, 50, 16, 0.0};
  auto single = dist::make_single_process();
  auto layout = make_layout("ddp", cfg, 1, *single);
  layout->init(1);
  auto idx = torch::randint(0, 50, {3, 16}, torch::kInt64);
  auto targets = torch::randint(0, 50, {3, 16}, torch::kInt64);
  auto loss = model::cross_entropy_mean(forward_logits(*layout, idx), targets);
  const auto losses = loss.token_losses.contiguous();
  const float value = model::mean_in_order(losses.data_ptr<float>(), losses.numel());
  EXPECT_NEAR(value, std::log(50.0), 0.1);
  EXPECT_NEAR(loss.objective.item<float>(), value, 1e-4);
}

// ---------------------------------------------------------------------------------------------
// Canonical summation

float reference_sum(const std::vector<float>& t, size_t lo, size_t hi) {
  const size_t n = hi - lo;
  if (n % 2 == 0 && n > 0) {
    const size_t mid = lo + n / 2;
    return reference_sum(t, lo, mid) + reference_sum(t, mid, hi);
  }
  float s = t[lo];
  for (size_t i = lo + 1; i < hi; ++i) s += t[i];
  return s;
}

std::vector<float> random_terms(size_t n, uint32_t seed) {
  // Wildly different magnitudes, so any other order gives other bits.
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-1, 1);
  std::uniform_int_distribution<int> ex(-20, 20);
  std::vector<float> t(n);
  for (auto& x : t) x = std::ldexp(mant(rng), ex(rng));
  return t;
}

float streamed_sum(const std::vector<float>& t, size_t lo, size_t hi) {
  auto s = make_canonical_sum<float>(int64_t(hi - lo), [](float& a, const float& b) { a += b; });
  for (size_t i = lo; i < hi; ++i) s.push(t[i]);
  return s.result();
}

TEST(CanonicalSum, StreamingEqualsTheDefinitionBitwise) {
  for (size_t m = 1; m <= 96; ++m) {
    auto t = random_terms(m, uint32_t(m));
    EXPECT_EQ(streamed_sum(t, 0, m), reference_sum(t, 0, m)) << "M=" << m;
  }
}

TEST(CanonicalSum, OrderActuallyMatters) {
  // Guards the test above: a plain left fold must differ for these inputs.
  auto t = random_terms(64, 64);
  float fold = 0;
  for (float x : t) fold += x;
  EXPECT_NE(fold, reference_sum(t, 0, t.size()));
}

TEST(CanonicalSum, AlignedRankBlocksCombineToTheSameBits) {
  // N ranks, each summing M/N consecutive terms, then pairwise combination (r xor 1, r xor 2...).
  for (size_t m : {8u, 12u, 24u, 40u, 64u}) {
    auto t = random_terms(m, uint32_t(1000 + m));
    const float want = reference_sum(t, 0, m);
    // Every power of two N dividing M is a valid world size.
    for (size_t n = 1; m % n == 0; n *= 2) {
      std::vector<float> part(n);
      for (size_t r = 0; r < n; ++r) part[r] = streamed_sum(t, r * (m / n), (r + 1) * (m / n));
      for (size_t stride = 1; stride < n; stride *= 2)
        for (size_t r = 0; r < n; r += 2 * stride) part[r] = part[r] + part[r + stride];
      EXPECT_EQ(part[0], want) << "M=" << m << " N=" << n;
    }
  }
}

}  // namespace
}  // namespace wit
