// The fused bias and GELU (model.gelu = fused) against the ATen form it replaces: the same rows
// and gradients to rounding, in fp32 and bf16, at the edges (one column, a partial chunk of rows,
// the GELU's flat tails). Its CPU form runs the kernels' chunks in a loop
// (trainer/model/bias_gelu_rows.h), with e^x from IEEE-rounded operations alone, so its bits are
// the arithmetic's on every CPU, and on a GPU the kernels must give them exactly.
#include "trainer/model/bias_gelu.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "record/run_config.h"
#include "tests/train/fused_keys.h"
#include "trainer/compute.h"
#include "trainer/model/kernel_arith.h"

namespace wit {
namespace {

// The distance in representable floats between f and the double v rounded to float.
int64_t ulps(float f, double v) {
  const float want = float(v);
  auto ordered = [](float x) {
    int32_t i;
    std::memcpy(&i, &x, sizeof i);
    return i < 0 ? int64_t(std::numeric_limits<int32_t>::min()) - i : int64_t(i);
  };
  return std::llabs(ordered(f) - ordered(want));
}

// Every float in [-103.9, 88.7] a stride apart (its last bits varied), against e^x in double;
// the limits and the special values exactly.
TEST(FusedBiasGelu, ItsExpIsWithinAnUlpAndExactAtItsLimits) {
  using model::kernel::exp_of;
  int64_t worst = 0;
  float worst_x = 0.0f;
  for (float x = -103.9f; x < 88.7f; x = std::nextafter(x + 1.3e-4f, 100.0f)) {
    const int64_t d = ulps(exp_of(x), std::exp(double(x)));
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  }
  EXPECT_LE(worst, 1) << "at x = " << worst_x;
  EXPECT_EQ(exp_of(0.0f), 1.0f);
  EXPECT_EQ(exp_of(-0.0f), 1.0f);
  EXPECT_EQ(exp_of(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_of(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_of(88.8f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_of(-104.0f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_of(std::numeric_limits<float>::quiet_NaN())));
  // Subnormal results, rounded once, and the largest finite ones.
  for (float x : {-88.0f, -95.5f, -100.0f, -103.0f, -103.97f, 88.72f, 88.7228f})
    EXPECT_LE(ulps(exp_of(x), std::exp(double(x))), 1) << "at x = " << x;
}

struct Case {
  torch::Tensor h, b, dy;  // (rows, C), (C,), (rows, C); fp32
};

Case random_case(int64_t rows, int64_t C, double scale, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return {torch::randn({rows, C}, gen) * scale, torch::randn({C}, gen) * 0.5,
          torch::randn({rows, C}, gen)};
}

struct Result {
  torch::Tensor y, dh, db;
};

// Rows and gradients by either form, in h's type.
Result run(const Case& c, bool fused, torch::ScalarType type = torch::kFloat32) {
  auto h = c.h.to(type).detach().requires_grad_();
  auto b = c.b.detach().clone().requires_grad_();
  const auto y = fused ? model::fused_bias_gelu(h, b) : torch::gelu(h + b, "tanh");
  y.backward(c.dy.to(y.scalar_type()));
  return {y.detach(), h.grad(), b.grad()};
}

TEST(FusedBiasGelu, MatchesTheAtenFormToRoundingInFp32) {
  // One column, a chunk, one past, GPT-2's widths; scale 8 reaches the flat tails.
  for (auto [rows, C] : std::vector<std::pair<int64_t, int64_t>>{
           {5, 1}, {64, 33}, {65, 7}, {130, 3072}, {3, 6400}}) {
    for (double scale : {1.0, 8.0}) {
      const Case c = random_case(rows, C, scale, uint64_t(rows * 10000 + C));
      const Result want = run(c, false), got = run(c, true);
      const std::string at =
          std::to_string(rows) + "x" + std::to_string(C) + " at scale " + std::to_string(scale);
      ASSERT_EQ(got.y.scalar_type(), torch::kFloat32);
      EXPECT_LE(max_diff(got.y, want.y), 4e-7 * (1.0 + max_abs(want.y))) << at;
      EXPECT_LE(max_diff(got.dh, want.dh), 2e-6 * (1.0 + max_abs(want.dh))) << at;
      // Sums over up to 130 rows, in chunks here and in ATen's order there.
      EXPECT_LE(max_diff(got.db, want.db), 2e-7 * (1.0 + max_abs(want.db)) * double(rows)) << at;
    }
  }
  // The tails, exactly as tanh's form gives them: z far above 0 passes, far below gives -0 and
  // a zero gradient.
  const auto h = torch::tensor({30.0f, 1e6f, -30.0f, -1e6f}).view({1, 4});
  const auto y = model::fused_bias_gelu_rows(h, torch::zeros({4}));
  EXPECT_TRUE(torch::equal(y, torch::tensor({30.0f, 1e6f, -0.0f, -0.0f}).view({1, 4})));
  EXPECT_TRUE(std::signbit(y[0][2].item<float>()));
  const auto g = model::fused_bias_gelu_grads(torch::ones({1, 4}), h, torch::zeros({4}));
  EXPECT_TRUE(torch::equal(g.dh, torch::tensor({1.0f, 1.0f, 0.0f, 0.0f}).view({1, 4})));
}

// Under bf16 the matmul writes bf16 rows: the fused form reads them and writes bf16, one
// rounding of the fp32 value, and the bias's gradient sums the fp32 values before theirs.
TEST(FusedBiasGelu, Bf16RowsAreTheFp32ValuesRounded) {
  Case c = random_case(70, 96, 2.0, 7);
  c.h = c.h.to(torch::kBFloat16).to(torch::kFloat32);  // representable in bf16
  c.dy = c.dy.to(torch::kBFloat16).to(torch::kFloat32);
  const Result f32 = run(c, true, torch::kFloat32), bf16 = run(c, true, torch::kBFloat16);
  ASSERT_EQ(bf16.y.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(bf16.dh.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(bf16.y, f32.y.to(torch::kBFloat16)));  // c10's rounding, bit for bit
  EXPECT_TRUE(torch::equal(bf16.dh, f32.dh.to(torch::kBFloat16)));
  EXPECT_EQ(bf16.db.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(bf16.db, f32.db));
}

// The MLP's first layer as gpt.cpp calls it, under bf16 autocast: the fused form's matmul runs
// without the bias, whose gradient is fp32; the rows and every gradient are ATen's to bf16
// rounding.
TEST(FusedBiasGelu, UnderAutocastTheMlpsFirstLayerGivesAtensValues) {
  const int64_t rows = 64, C = 48, F = 192;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const auto x0 = torch::randn({rows, C}, gen), W0 = torch::randn({F, C}, gen) * 0.2,
             b0 = torch::randn({F}, gen) * 0.5, dout = torch::randn({rows, F}, gen);
  struct Out {
    torch::Tensor y, dx, dw, db;
  };
  auto mlp = [&](const std::string& kind) {
    model::GPTConfig cfg;
    cfg.gelu = kind;
    auto x = x0.clone().requires_grad_(), W = W0.clone().requires_grad_(),
         b = b0.clone().requires_grad_();
    torch::Tensor y;
    {
      const CpuAutocast autocast;
      y = model::linear_gelu(cfg, x, W, b);
    }
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16) << kind;
    y.backward(dout.to(y.scalar_type()));
    return Out{y.detach().to(torch::kFloat32), x.grad(), W.grad(), b.grad()};
  };
  const Out want = mlp("ops"), got = mlp("fused");
  for (auto [a, b] :
       {std::pair{got.y, want.y}, {got.dx, want.dx}, {got.dw, want.dw}, {got.db, want.db}})
    EXPECT_LE(max_diff(a, b), 1e-2 * max_abs(b));  // a few bf16 roundings of the largest value
  EXPECT_EQ(got.db.scalar_type(), torch::kFloat32);
}

// The arithmetic is its version's (model::kFusedGeluArithmetic): these bits, on every CPU (only
// IEEE-rounded +, -, * and /) and on every GPU. A change to bias_gelu_rows.h or to
// kernel_arith.h's exp_of that moves them is a new version: change the constant and this hash
// together.
TEST(FusedBiasGelu, ItsBitsAreItsVersions) {
  const int64_t rows = 150, C = 80;
  const auto h = pattern(rows * C, 1, 6.0f, -0.5f).view({rows, C});
  const auto b = pattern(C, 2, 0.5f, 0.0f), dy = pattern(rows * C, 3, 1.0f, 0.0f).view({rows, C});
  uint64_t hash = 0xcbf29ce484222325ull;
  for (auto type : {torch::kFloat32, torch::kBFloat16}) {
    const auto y = model::fused_bias_gelu_rows(h.to(type), b);
    const auto g = model::fused_bias_gelu_grads(dy.to(type), h.to(type), b);
    for (const auto& t : {y, g.dh, g.dbias}) hash = fnv1a(t, hash);
  }
  EXPECT_STREQ(model::kFusedGeluArithmetic, "wit-bias-gelu-v1");
  EXPECT_EQ(hash, 5170125524128708795ull)
      << "the fused bias and GELU's bits moved: its arithmetic is a new version";
}

TEST(FusedBiasGelu, RefusesTensorsItCannotRead) {
  const Case c = random_case(4, 10, 1.0, 5);
  EXPECT_THROW(model::fused_bias_gelu_rows(c.h.to(torch::kFloat64), c.b), Error);
  EXPECT_THROW(model::fused_bias_gelu_rows(c.h.to(torch::kFloat16), c.b), Error);
  EXPECT_THROW(model::fused_bias_gelu_rows(c.h.t(), c.b.narrow(0, 0, 4)), Error);
  EXPECT_THROW(model::fused_bias_gelu_rows(c.h, c.b.narrow(0, 0, 9)), Error);
  EXPECT_THROW(model::fused_bias_gelu_rows(c.h, c.b.to(torch::kBFloat16)), Error);
  EXPECT_THROW(model::fused_bias_gelu_rows(c.h.narrow(1, 0, 0), c.b.narrow(0, 0, 0)), Error);
  EXPECT_THROW(model::fused_bias_gelu_grads(c.dy.narrow(0, 0, 3), c.h, c.b), Error);
  EXPECT_THROW(model::fused_bias_gelu_grads(c.dy.to(torch::kBFloat16), c.h, c.b), Error);
  EXPECT_THROW(model::fused_bias_gelu_grads(c.dy.t().contiguous().t(), c.h, c.b), Error);
}

// The kernels are part of the trajectory: a run commits "fused"; "ops" is what a config without
// the key means. On the CPU the fused form is refused (it is for a GPU).
TEST(FusedBiasGelu, ARunCommitsItAndTheCpuRefusesIt) {
  expect_committed_only_when_fused("model.gelu");
  auto cfg = config_with({"model.gelu=fused", "train.device=cpu"});
  try {
    resolve_compute(cfg, 1, true);
    ADD_FAILURE() << "model.gelu=fused accepted on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.gelu = fused: its kernels run on CUDA only"),
              std::string::npos)
        << e.what();
  }
  // A log that commits it with no GPU session: no exact replay; within a tolerance, ATen's.
  const RunConfig rc = run_config_from(cfg);
  EXPECT_EQ(rc.model.gelu, "fused");
  EXPECT_THROW(replay_compute("[]", rc, /*tolerance=*/false, 1, nullptr), Error);
  std::string note;
  EXPECT_EQ(replay_compute("[]", rc, /*tolerance=*/true, 1, &note).gelu, "ops");
  EXPECT_NE(note.find("model.gelu = fused"), std::string::npos) << note;
  EXPECT_THROW(config_with({"model.gelu=bogus"}), Error);
}

// On a GPU (launch/gpu-check runs it; skipped here): the kernels give the CPU form's bits exactly,
// both types, and again on a second run.
TEST(DeviceOpsCuda, FusedBiasGeluKernels) {
  if (!libtorch_has_cuda() || !torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  for (auto type : {torch::kFloat32, torch::kBFloat16})
    for (auto [rows, C] :
         std::vector<std::pair<int64_t, int64_t>>{{5, 1}, {65, 33}, {130, 3072}, {1000, 6400}}) {
      const Case c = random_case(rows, C, 4.0, uint64_t(C));
      const auto h = c.h.to(type), dy = c.dy.to(type);
      const auto want = model::fused_bias_gelu_rows(h, c.b);
      const auto want_g = model::fused_bias_gelu_grads(dy, h, c.b);
      const auto hg = h.to(gpu), bg = c.b.to(gpu), dg = dy.to(gpu);
      for (int repeat = 0; repeat < 2; ++repeat) {
        const std::string at = std::to_string(rows) + "x" + std::to_string(C) + " " +
                               c10::toString(type) + ", run " + std::to_string(repeat + 1);
        EXPECT_TRUE(torch::equal(model::fused_bias_gelu_rows(hg, bg).cpu(), want)) << at;
        const auto g = model::fused_bias_gelu_grads(dg, hg, bg);
        EXPECT_TRUE(torch::equal(g.dh.cpu(), want_g.dh)) << at << ": the rows' gradient";
        EXPECT_TRUE(torch::equal(g.dbias.cpu(), want_g.dbias)) << at << ": the bias's gradient";
      }
    }
}

}  // namespace
}  // namespace wit
