// The fused cross-entropy (model.cross_entropy = fused) against the ATen form it replaces: the
// same losses and gradients to rounding, in fp32 and bf16, at the edges (infinities, NaN, a
// target out of range, rows narrower than the lanes). Its CPU form runs the kernels' lanes and
// tree in a loop (trainer/model/cross_entropy_rows.h); on a GPU the kernels are compared with it.
#include "trainer/model/cross_entropy.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "core/error.h"
#include "record/run_config.h"
#include "tests/train/fused_keys.h"
#include "trainer/compute.h"
#include "trainer/model/cross_entropy_rows.h"

namespace wit {
namespace {

struct Case {
  torch::Tensor logits;   // (rows, V) fp32
  torch::Tensor targets;  // (rows,) int64
};

Case random_case(int64_t rows, int64_t V, double scale, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return {torch::randn({rows, V}, gen) * scale, torch::randint(0, V, {rows}, gen)};
}

// Token losses and the logits' gradient of the mean, by either form.
std::pair<torch::Tensor, torch::Tensor> loss_and_grad(const torch::Tensor& logits,
                                                      const torch::Tensor& targets, bool fused) {
  auto x = logits.detach().clone().requires_grad_();
  const model::Loss loss =
      fused ? model::fused_cross_entropy_mean(x, targets) : model::cross_entropy_mean(x, targets);
  loss.objective.backward();
  return {loss.token_losses, x.grad()};
}

TEST(FusedCrossEntropy, MatchesTheAtenFormToRoundingInFp32) {
  // Narrower than the lanes, exactly the lanes, one past, and GPT-2's vocabulary.
  for (auto [rows, V] : std::vector<std::pair<int64_t, int64_t>>{
           {5, 1}, {7, 3}, {9, 255}, {4, 256}, {6, 257}, {3, 1000}, {2, 50257}}) {
    for (double scale : {1.0, 30.0}) {
      const Case c = random_case(rows, V, scale, uint64_t(rows * 1000 + V));
      const auto [want_loss, want_grad] = loss_and_grad(c.logits, c.targets, false);
      const auto [loss, grad] = loss_and_grad(c.logits, c.targets, true);
      ASSERT_EQ(loss.scalar_type(), torch::kFloat32);
      ASSERT_EQ(grad.scalar_type(), torch::kFloat32);
      const double lse_scale = 1.0 + c.logits.abs().max().item<double>() + std::log(double(V));
      EXPECT_LT(max_diff(loss, want_loss), 4e-6 * lse_scale) << rows << "x" << V << " " << scale;
      // exp(x - lse) carries lse's rounding, an ulp of the logits' size.
      EXPECT_LT(max_diff(grad, want_grad), 1e-7 * lse_scale) << rows << "x" << V << " " << scale;
    }
  }
}

// bf16 logits (what the head's matmul gives under autocast) are read as they are; the gradient
// comes back in bf16, within one rounding of the fp32 gradient the ATen form casts down.
TEST(FusedCrossEntropy, ReadsBf16LogitsAndReturnsBf16Gradients) {
  const Case c = random_case(8, 3000, 4.0, 7);
  const auto x16 = c.logits.to(torch::kBFloat16);
  const auto [want_loss, want_grad] = loss_and_grad(x16.to(torch::kFloat32), c.targets, false);
  const auto [loss, grad] = loss_and_grad(x16, c.targets, true);
  ASSERT_EQ(loss.scalar_type(), torch::kFloat32);
  ASSERT_EQ(grad.scalar_type(), torch::kBFloat16);
  EXPECT_LT(max_diff(loss, want_loss), 1e-4);
  // One bf16 step at the gradient's size: 2^-8 relative.
  const auto tol = want_grad.abs() * (1.0 / 256) + 1e-9;
  EXPECT_TRUE(((grad.to(torch::kFloat32) - want_grad).abs() <= tol).all().item<bool>());
}

TEST(FusedCrossEntropy, EdgesOfTheRowArithmetic) {
  const float inf = std::numeric_limits<float>::infinity();
  Case c = random_case(5, 300, 1.0, 3);
  auto x = c.logits.accessor<float, 2>();
  x[0][10] = -inf;  // a masked column: no weight, as in log-softmax
  x[0][299] = -inf;
  for (int j = 0; j < 300; ++j) x[1][j] = 2e4f + float(j % 7);  // far from 0: no overflow
  x[2][17] = std::numeric_limits<float>::quiet_NaN();
  c.targets[0] = 11;
  c.targets[4] = 300;  // out of range
  const auto [loss, grad] = loss_and_grad(c.logits, c.targets, true);
  const auto [want_loss, want_grad] =
      loss_and_grad(c.logits.narrow(0, 0, 2), c.targets.narrow(0, 0, 2), false);
  // Rows 0 and 1 as ATen has them (the mean's 1/n differs: 1/5 here, 1/2 there).
  EXPECT_LT(max_diff(loss.narrow(0, 0, 1), want_loss.narrow(0, 0, 1)), 1e-5);
  EXPECT_LT(max_diff(loss.narrow(0, 1, 1), want_loss.narrow(0, 1, 1)), 1e-2);  // ulp(2e4) = 2e-3
  EXPECT_LT(max_diff(grad.narrow(0, 0, 1) * 5.0, want_grad.narrow(0, 0, 1) * 2.0), 1e-6);
  EXPECT_LT(max_diff(grad.narrow(0, 1, 1) * 5.0, want_grad.narrow(0, 1, 1) * 2.0), 1e-3);
  EXPECT_EQ(grad[0][10].item<float>(), 0.0f);
  // A NaN logit makes its row's loss and gradient NaN, and only its row's.
  EXPECT_TRUE(std::isnan(loss[2].item<float>()));
  EXPECT_TRUE(torch::isnan(grad[2]).all().item<bool>());
  EXPECT_TRUE(std::isfinite(loss[3].item<float>()));
  EXPECT_TRUE(torch::isfinite(grad[3]).all().item<bool>());
  // A target out of range has no loss: NaN (ATen's would stop the device), gradient NaN too.
  EXPECT_TRUE(std::isnan(loss[4].item<float>()));
  EXPECT_TRUE(torch::isnan(grad[4]).all().item<bool>());
}

// The rows' pieces refuse what they cannot read, in words.
TEST(FusedCrossEntropy, RefusesTensorsItCannotRead) {
  const Case c = random_case(4, 10, 1.0, 5);
  EXPECT_THROW(model::fused_cross_entropy_rows(c.logits.to(torch::kFloat64), c.targets), Error);
  EXPECT_THROW(model::fused_cross_entropy_rows(c.logits.t(), c.targets.narrow(0, 0, 4)), Error);
  EXPECT_THROW(model::fused_cross_entropy_rows(c.logits, c.targets.to(torch::kInt32)), Error);
  EXPECT_THROW(model::fused_cross_entropy_rows(c.logits, c.targets.narrow(0, 0, 3)), Error);
  const auto [loss, lse] = model::fused_cross_entropy_rows(c.logits, c.targets);
  EXPECT_THROW(model::fused_cross_entropy_grad(c.logits, c.targets, lse, torch::ones({3})), Error);
}

// The kernels write bf16 with the header's rounding: c10's, ties to even, NaN kept a NaN.
TEST(FusedCrossEntropy, Bf16RoundingIsTorchs) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  auto v = torch::randn({20000}, gen) * 1e3;
  auto bits = torch::randint(0, int64_t(1) << 31, {20000}, gen).to(torch::kInt32);
  std::vector<float> values(v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  const auto b = bits.accessor<int32_t, 1>();
  for (int64_t i = 0; i < b.size(0); ++i) {  // arbitrary patterns: subnormals, ties, NaNs
    uint32_t u = uint32_t(b[i]) | (i % 2 ? 0x80000000u : 0u);
    float f;
    std::memcpy(&f, &u, sizeof f);
    values.push_back(f);
  }
  for (float f :
       {0.0f, -0.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()})
    values.push_back(f);
  for (float f : values) {
    const uint16_t want = c10::BFloat16(f).x;
    const uint16_t got = model::kernel::float_to_bf16(f);
    ASSERT_EQ(got, want) << f;  // NaN too: both give 0x7FC0
    if (!std::isnan(f)) {
      EXPECT_EQ(model::kernel::bf16_to_float(got), float(c10::BFloat16(f))) << f;
    }
  }
}

// The kernels are part of the trajectory: a run commits "fused"; "ops" is what a config without
// the key means. On the CPU the fused form is refused (it is for a GPU).
TEST(FusedCrossEntropy, ARunCommitsItAndTheCpuRefusesIt) {
  expect_committed_only_when_fused("model.cross_entropy");
  // train.device=cpu: refused on a machine with a GPU too.
  auto cfg = config_with({"model.cross_entropy=fused", "train.device=cpu"});
  try {
    resolve_compute(cfg, 1, true);
    ADD_FAILURE() << "model.cross_entropy=fused accepted on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("model.cross_entropy = fused: its kernels run on CUDA only"),
        std::string::npos)
        << e.what();
  }
  // A log that commits it with no GPU session: no exact replay; within a tolerance, ATen's.
  const RunConfig rc = run_config_from(cfg);
  const std::string cpu_sessions = "[]";
  EXPECT_THROW(replay_compute(cpu_sessions, rc, /*tolerance=*/false, 1, nullptr), Error);
  std::string note;
  EXPECT_EQ(replay_compute(cpu_sessions, rc, /*tolerance=*/true, 1, &note).cross_entropy, "ops");
  EXPECT_NE(note.find("no session of it trained on a GPU"), std::string::npos) << note;
}

// On a GPU (launch/gpu-check runs it; skipped here): the kernels give the CPU form's losses and
// gradients to the rounding of the device's expf and logf, and repeat their bits.
TEST(DeviceOpsCuda, FusedCrossEntropyKernels) {
  if (!libtorch_has_cuda() || !torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  for (auto type : {torch::kFloat32, torch::kBFloat16})
    for (auto [rows, V] : std::vector<std::pair<int64_t, int64_t>>{{7, 3}, {9, 257}, {64, 50257}}) {
      const Case c = random_case(rows, V, 4.0, uint64_t(V));
      const auto x = c.logits.to(type);
      const auto [want_loss, want_lse] = model::fused_cross_entropy_rows(x, c.targets);
      const auto g = torch::rand({rows}) + 0.5;
      const auto want_grad = model::fused_cross_entropy_grad(x, c.targets, want_lse, g);
      auto run = [&] {
        const auto [loss, lse] = model::fused_cross_entropy_rows(x.to(gpu), c.targets.to(gpu));
        const auto grad =
            model::fused_cross_entropy_grad(x.to(gpu), c.targets.to(gpu), lse, g.to(gpu));
        return std::tuple{loss.cpu(), lse.cpu(), grad.cpu()};
      };
      const auto [loss, lse, grad] = run();
      EXPECT_LT(max_diff(loss, want_loss), 1e-5 * (1.0 + want_lse.abs().max().item<double>()));
      EXPECT_LT(max_diff(lse, want_lse), 1e-5 * (1.0 + want_lse.abs().max().item<double>()));
      const auto tol = want_grad.to(torch::kFloat32).abs() * (1.0 / 128) + 1e-7;
      EXPECT_TRUE(((grad.to(torch::kFloat32) - want_grad.to(torch::kFloat32)).abs() <= tol)
                      .all()
                      .item<bool>())
          << rows << "x" << V;
      const auto [loss2, lse2, grad2] = run();
      EXPECT_TRUE(torch::equal(loss, loss2) && torch::equal(lse, lse2) &&
                  torch::equal(grad, grad2));
    }
}

}  // namespace
}  // namespace wit
