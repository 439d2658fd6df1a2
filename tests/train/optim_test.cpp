// AdamW, the learning-rate schedule and clipping: exact formulas, independent of how the flat
// buffer is split or how many threads run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>

#include "trainer/optim/adamw.h"

namespace wit::optim {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(LearningRate, WarmupThenCosineToMinimum) {
  AdamWConfig c;
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  c.warmup_steps = 10;
  EXPECT_FLOAT_EQ(hyper_at(c, 0, 100).lr, 1e-4f);
  EXPECT_FLOAT_EQ(hyper_at(c, 9, 100).lr, 1e-3f);
  EXPECT_FLOAT_EQ(hyper_at(c, 10, 100).lr, 1e-3f);
  EXPECT_FLOAT_EQ(hyper_at(c, 99, 100).lr, 1e-4f);
  EXPECT_GT(hyper_at(c, 40, 100).lr, hyper_at(c, 60, 100).lr);
  EXPECT_FLOAT_EQ(hyper_at(c, 50, 100).weight_decay, float(c.weight_decay));
}

TEST(Schedule, LinearAndWarmupStableDecayEndAtMinLr) {
  AdamWConfig c;
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  c.warmup_steps = 10;
  c.schedule = Schedule::Linear;
  EXPECT_FLOAT_EQ(hyper_at(c, 9, 100).lr, 1e-3f);   // warmup as before
  EXPECT_FLOAT_EQ(hyper_at(c, 10, 100).lr, 1e-3f);
  EXPECT_FLOAT_EQ(hyper_at(c, 99, 100).lr, 1e-4f);
  // Halfway through the decay (step 10 + 89/2): halfway between lr and min_lr, on a line.
  EXPECT_NEAR(hyper_at(c, 54, 100).lr, 1e-3 - 0.9e-3 * 44.0 / 89.0, 1e-9);
  c.schedule = Schedule::Wsd;
  c.decay_fraction = 0.2;  // 90 steps after warmup: the last 18 decay
  EXPECT_FLOAT_EQ(hyper_at(c, 10, 100).lr, 1e-3f);
  EXPECT_FLOAT_EQ(hyper_at(c, 81, 100).lr, 1e-3f);  // still stable
  EXPECT_LT(hyper_at(c, 82, 100).lr, 1e-3f);        // the first decaying step
  EXPECT_NEAR(hyper_at(c, 82, 100).lr, 1e-3 - 0.9e-3 / 18.0, 1e-9);
  EXPECT_FLOAT_EQ(hyper_at(c, 99, 100).lr, 1e-4f);
  for (int64_t s = 83; s < 100; ++s) EXPECT_LT(hyper_at(c, s, 100).lr, hyper_at(c, s - 1, 100).lr) << s;
}

TEST(AdamW, MatchesTheWrittenFormula) {
  const size_t n = 1000;
  auto p = randn(n, 1), g = randn(n, 2), m = randn(n, 3, 0.1f), v = randn(n, 4, 0.1f);
  for (auto& x : v) x = std::abs(x);
  auto p2 = p, m2 = m, v2 = v;
  Hyper h{1e-3f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
  const int64_t t = 7;
  std::vector<DecaySegment> segs = {{0, 600, true}, {600, 1000, false}};
  adamw_update(p.data(), g.data(), m.data(), v.data(), n, segs, t, h);
  const float step_size = float(1e-3 / (1.0 - std::pow(double(0.9f), 7)));
  const float bc2 = float(std::sqrt(1.0 - std::pow(double(0.95f), 7)));
  for (size_t i = 0; i < n; ++i) {
    float mi = 0.9f * m2[i] + (1.0f - 0.9f) * g[i];
    float vi = 0.95f * v2[i] + (1.0f - 0.95f) * (g[i] * g[i]);
    float d = i < 600 ? 1.0f - 1e-3f * 0.1f : 1.0f;
    float want = p2[i] * d - step_size * (mi / (std::sqrt(vi) / bc2 + 1e-8f));
    ASSERT_FLOAT_EQ(m[i], mi) << i;
    ASSERT_FLOAT_EQ(p[i], want) << i;
  }
}

TEST(AdamW, SplittingTheBufferChangesNoBit) {
  const size_t n = 200'003;
  auto p = randn(n, 5), g = randn(n, 6), m = randn(n, 7), v = randn(n, 8);
  for (auto& x : v) x = std::abs(x);
  auto pa = p, ma = m, va = v;
  Hyper h{3e-4f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
  std::vector<DecaySegment> segs = {{0, 150'000, true}, {150'000, int64_t(n), false}};
  adamw_update(pa.data(), g.data(), ma.data(), va.data(), n, segs, 3, h);
  // Same update in three uneven pieces, as shards would do it.
  const int64_t cuts[] = {0, 77'777, 160'001, int64_t(n)};
  for (int k = 0; k < 3; ++k) {
    const int64_t b = cuts[k], e = cuts[k + 1];
    std::vector<DecaySegment> local;
    for (auto s : segs) local.push_back({s.begin - b, s.end - b, s.decay});
    adamw_update(p.data() + b, g.data() + b, m.data() + b, v.data() + b, e - b, local, 3, h);
  }
  EXPECT_EQ(0, std::memcmp(p.data(), pa.data(), n * 4));
  EXPECT_EQ(0, std::memcmp(m.data(), ma.data(), n * 4));
  EXPECT_EQ(0, std::memcmp(v.data(), va.data(), n * 4));
}

TEST(GradNorm, IndependentOfThreadCount) {
  auto g = randn(1'000'003, 9);
  torch::set_num_threads(1);
  const double one = grad_norm(g.data(), int64_t(g.size()));
  torch::set_num_threads(2);
  const double two = grad_norm(g.data(), int64_t(g.size()));
  torch::set_num_threads(1);
  EXPECT_EQ(one, two);
  double ref = 0;
  for (float x : g) ref += double(x) * x;
  EXPECT_NEAR(one, std::sqrt(ref), 1e-9 * std::sqrt(ref));
}

TEST(GradNorm, ClippingScalesOnlyAboveThreshold) {
  std::vector<float> g = {3.0f, 4.0f};
  EXPECT_EQ(clip_grads(g.data(), 2, 5.0, 10.0f), 1.0f);
  EXPECT_EQ(g[0], 3.0f);
  const float f = clip_grads(g.data(), 2, 5.0, 1.0f);
  EXPECT_FLOAT_EQ(f, float(1.0 / (5.0 + 1e-6)));
  EXPECT_FLOAT_EQ(g[1], 4.0f * f);
  EXPECT_EQ(clip_grads(g.data(), 2, 5.0, 0.0f), 1.0f);  // 0 disables clipping
}

}  // namespace
}  // namespace wit::optim
