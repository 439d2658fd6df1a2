// The fused layer norm (model.layer_norm = fused) against the ATen form it replaces: the same rows
// and gradients to rounding, in fp32 and bf16, at the edges (one column, rows narrower than the
// lanes, a partial chunk of rows). Its CPU form runs the kernels' lanes, tree and chunks in a loop
// (trainer/model/layer_norm_rows.h) with only IEEE-rounded operations, so its bits are the
// arithmetic's on every CPU, and on a GPU the kernels must give them exactly.
#include "trainer/model/layer_norm.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "core/error.h"
#include "record/run_config.h"
#include "tests/train/fused_keys.h"
#include "trainer/compute.h"

namespace wit {
namespace {

struct Case {
  torch::Tensor x, w, b, dy;  // (rows, C), (C,), (C,), (rows, C); fp32
};

Case random_case(int64_t rows, int64_t C, double scale, double offset, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return {torch::randn({rows, C}, gen) * scale + offset, torch::randn({C}, gen) + 1.0,
          torch::randn({C}, gen) * 0.1, torch::randn({rows, C}, gen)};
}

struct Result {
  torch::Tensor y, dx, dw, db;
};

// Rows and gradients by either form (the fused one in `out`).
Result run(const Case& c, bool fused, torch::ScalarType out = torch::kFloat32) {
  auto x = c.x.detach().clone().requires_grad_();
  auto w = c.w.detach().clone().requires_grad_();
  auto b = c.b.detach().clone().requires_grad_();
  const auto y = fused ? model::fused_layer_norm(x, w, b, out)
                       : torch::layer_norm(x, {c.x.size(1)}, w, b, 1e-5);
  y.backward(c.dy.to(y.scalar_type()));
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

TEST(FusedLayerNorm, MatchesTheAtenFormToRoundingInFp32) {
  // One column, narrower than the lanes, the lanes, one past, GPT-2's widths; 130 rows end in a
  // partial chunk of the weight gradients' sums.
  for (auto [rows, C] : std::vector<std::pair<int64_t, int64_t>>{
           {5, 1}, {7, 31}, {9, 32}, {4, 33}, {130, 768}, {3, 1600}}) {
    for (auto [scale, offset] : std::vector<std::pair<double, double>>{{1.0, 0.0}, {0.01, 50.0}}) {
      const Case c = random_case(rows, C, scale, offset, uint64_t(rows * 10000 + C));
      const Result want = run(c, false), got = run(c, true);
      ASSERT_EQ(got.y.scalar_type(), torch::kFloat32);
      const std::string at =
          std::to_string(rows) + "x" + std::to_string(C) + (offset > 0 ? " off the origin" : "");
      // Each form's mean carries an ulp of the inputs' size: relative to the rows' spread, that
      // is cond ulps of the normalised values.
      const double cond = 1.0 + offset / scale;
      EXPECT_LE(max_diff(got.y, want.y), 1e-6 * cond * (1.0 + max_abs(want.y))) << at;
      // A row of one column has xhat = 0 exactly here (ATen's carries its mean's rounding).
      if (C == 1) {
        EXPECT_TRUE(torch::equal(got.y, c.b.expand({rows, 1}))) << at;
        EXPECT_EQ(max_abs(got.dx), 0.0) << at;
        EXPECT_EQ(max_abs(got.dw), 0.0) << at;
      } else {
        EXPECT_LE(max_diff(got.dx, want.dx), 1e-6 * cond * (1.0 + max_abs(want.dx))) << at;
        // Sums over up to 130 rows, in chunks here and in ATen's order there.
        EXPECT_LE(max_diff(got.dw, want.dw), 5e-7 * cond * (1.0 + max_abs(want.dw)) * double(rows))
            << at;
      }
      EXPECT_LE(max_diff(got.db, want.db), 1e-7 * (1.0 + max_abs(want.db)) * double(rows)) << at;
    }
  }
}

// Under bf16 autocast the next matmul reads bf16: the rows are written in bf16, one rounding of
// the fp32 rows, and the bf16 gradient the matmul gives back is read as it is.
TEST(FusedLayerNorm, WritesBf16RowsAndReadsBf16Gradients) {
  Case c = random_case(70, 96, 2.0, 1.0, 7);
  c.dy = c.dy.to(torch::kBFloat16).to(torch::kFloat32);  // representable in bf16
  const Result f32 = run(c, true, torch::kFloat32), bf16 = run(c, true, torch::kBFloat16);
  ASSERT_EQ(bf16.y.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(bf16.y, f32.y.to(torch::kBFloat16)));  // c10's rounding, bit for bit
  EXPECT_TRUE(torch::equal(bf16.dx, f32.dx));                     // widening bf16 is exact
  EXPECT_TRUE(torch::equal(bf16.dw, f32.dw));
  EXPECT_TRUE(torch::equal(bf16.db, f32.db));
  EXPECT_EQ(bf16.dx.scalar_type(), torch::kFloat32);  // the residual stream's type
}

// The residual add fused in front has the bits of libtorch's add followed by the fused layer norm:
// the sum, the rows and every gradient (autograd's sum of the sum's two gradients included), for
// an fp32 and a bf16 branch, with and without a gradient reaching the sum from after the block.
TEST(FusedLayerNorm, TheFusedResidualAddHasTheBitsOfTheAddThenTheNorm) {
  for (auto type : {torch::kFloat32, torch::kBFloat16}) {
    const Case c = random_case(130, 96, 1.0, 0.5, 21);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(22);
    const auto branch0 = torch::randn({130, 96}, gen).to(type);
    const auto dsum = torch::randn({130, 96}, gen);
    const auto dy = c.dy.to(type);
    // Gradients reaching the sum from after the block, the rows, or both.
    enum Through { kBoth, kRows, kSum };
    for (Through through : {kBoth, kRows, kSum}) {
      auto run = [&](bool fused) {
        auto residual = c.x.detach().clone().requires_grad_();
        auto branch = branch0.detach().clone().requires_grad_();
        auto w = c.w.detach().clone().requires_grad_();
        auto b = c.b.detach().clone().requires_grad_();
        torch::Tensor x, h;
        if (fused) {
          std::tie(x, h) = model::fused_add_layer_norm(residual, branch, w, b, type);
        } else {
          x = residual + branch;
          h = model::fused_layer_norm(x, w, b, type);
        }
        if (through == kBoth) torch::autograd::backward({x, h}, {dsum, dy});
        if (through == kRows) torch::autograd::backward({h}, {dy});
        if (through == kSum) torch::autograd::backward({x}, {dsum});
        return std::vector<torch::Tensor>{x.detach(),    h.detach(), residual.grad(),
                                          branch.grad(), w.grad(),   b.grad()};
      };
      const auto want = run(false), got = run(true);
      const char* names[] = {"sum",
                             "rows",
                             "residual's gradient",
                             "branch's gradient",
                             "weight's gradient",
                             "bias's gradient"};
      for (size_t i = 0; i < want.size(); ++i) {
        const std::string at = std::string(names[i]) + ", branch " + c10::toString(type) +
                               ", gradients through " +
                               (through == kBoth   ? "both"
                                : through == kRows ? "the rows"
                                                   : "the sum");
        ASSERT_EQ(got[i].defined(), want[i].defined()) << at;
        if (!want[i].defined()) continue;  // the weights get none through the sum alone
        ASSERT_EQ(got[i].scalar_type(), want[i].scalar_type()) << at;
        EXPECT_TRUE(torch::equal(got[i], want[i])) << at;
      }
    }
  }
}

// The model's layer norm (model::layer_norm, as gpt.cpp calls it) under bf16 autocast: the fused
// one writes bf16, what the matmul after it reads, and takes that matmul's bf16 gradient; the
// matmul's output and every gradient are libtorch's to bf16 rounding.
TEST(FusedLayerNorm, UnderAutocastItWritesWhatTheNextMatmulReads) {
  const int64_t rows = 64, C = 96;
  const Case c = random_case(rows, C, 1.0, 0.0, 9);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(10);
  const auto W = torch::randn({48, C}, gen) * 0.1, dout = torch::randn({rows, 48}, gen);
  struct Out {
    torch::ScalarType h;
    torch::Tensor out, dx, dw, db;
  };
  auto run = [&](const std::string& kind) {
    model::GPTConfig cfg;
    cfg.n_embd = C;
    cfg.layer_norm = kind;
    auto x = c.x.detach().clone().requires_grad_();
    auto w = c.w.detach().clone().requires_grad_();
    auto b = c.b.detach().clone().requires_grad_();
    torch::Tensor h, out;
    {
      const CpuAutocast autocast;
      h = model::layer_norm(cfg, x, w, b);
      out = torch::linear(h, W);
    }
    out.backward(dout.to(out.scalar_type()));
    return Out{h.scalar_type(), out.detach().to(torch::kFloat32), x.grad(), w.grad(), b.grad()};
  };
  const Out want = run("ops"), got = run("fused");
  EXPECT_EQ(got.h, torch::kBFloat16);
  for (auto [a, b] :
       {std::pair{got.out, want.out}, {got.dx, want.dx}, {got.dw, want.dw}, {got.db, want.db}})
    EXPECT_LE(max_diff(a, b), 1e-2 * max_abs(b));  // a few bf16 roundings of the largest value
}

// The arithmetic is its version's (model::kFusedLayerNormArithmetic): these bits, on every CPU
// (only IEEE-rounded +, -, *, / and sqrt) and on every GPU. A change to layer_norm_rows.h that
// moves them is a new version: change the constant and this hash together.
TEST(FusedLayerNorm, ItsBitsAreItsVersions) {
  const int64_t rows = 150, C = 80;
  const auto x = pattern(rows * C, 1, 3.0f, 0.5f).view({rows, C});
  const auto w = pattern(C, 2, 0.5f, 1.0f), b = pattern(C, 3, 0.1f, 0.0f);
  const auto dy = pattern(rows * C, 4, 1.0f, 0.0f).view({rows, C}).to(torch::kBFloat16);
  const auto f = model::fused_layer_norm_rows(x, w, b, torch::kBFloat16);
  const auto g = model::fused_layer_norm_grads(dy, x, w, f.mean, f.rstd);
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& t : {f.y, f.mean, f.rstd, g.dx, g.dweight, g.dbias}) h = fnv1a(t, h);
  EXPECT_STREQ(model::kFusedLayerNormArithmetic, "wit-layer-norm-v1");
  EXPECT_EQ(h, 4831240263163260145ull)
      << "the fused layer norm's bits moved: its arithmetic is a new version";
}

TEST(FusedLayerNorm, RefusesTensorsItCannotRead) {
  const Case c = random_case(4, 10, 1.0, 0.0, 5);
  const auto f32 = torch::kFloat32;
  EXPECT_THROW(model::fused_layer_norm_rows(c.x.to(torch::kFloat64), c.w, c.b, f32), Error);
  EXPECT_THROW(model::fused_layer_norm_rows(c.x.t(), c.w.narrow(0, 0, 4), c.b.narrow(0, 0, 4), f32),
               Error);
  EXPECT_THROW(model::fused_layer_norm_rows(c.x, c.w.narrow(0, 0, 9), c.b, f32), Error);
  EXPECT_THROW(model::fused_layer_norm_rows(c.x, c.w, c.b, torch::kFloat16), Error);
  EXPECT_THROW(model::fused_layer_norm_rows(c.x.narrow(1, 0, 0), c.w.narrow(0, 0, 0),
                                            c.b.narrow(0, 0, 0), f32),
               Error);
  const auto f = model::fused_layer_norm_rows(c.x, c.w, c.b, f32);
  EXPECT_THROW(model::fused_layer_norm_grads(c.dy.narrow(0, 0, 3), c.x, c.w, f.mean, f.rstd),
               Error);
  EXPECT_THROW(model::fused_layer_norm_grads(c.dy, c.x, c.w, f.mean.narrow(0, 0, 3), f.rstd),
               Error);
  EXPECT_THROW(model::fused_layer_norm_grads(c.dy.to(torch::kFloat64), c.x, c.w, f.mean, f.rstd),
               Error);
}

// The kernels are part of the trajectory: a run commits "fused"; "ops" is what a config without
// the key means. On the CPU the fused form is refused (it is for a GPU).
TEST(FusedLayerNorm, ARunCommitsItAndTheCpuRefusesIt) {
  expect_committed_only_when_fused("model.layer_norm");
  auto cfg = config_with({"model.layer_norm=fused", "train.device=cpu"});
  try {
    resolve_compute(cfg, 1, true);
    ADD_FAILURE() << "model.layer_norm=fused accepted on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layer_norm = fused: its kernels run on CUDA only"),
              std::string::npos)
        << e.what();
  }
  // A log that commits it with no GPU session: no exact replay; within a tolerance, ATen's.
  const RunConfig rc = run_config_from(cfg);
  EXPECT_THROW(replay_compute("[]", rc, /*tolerance=*/false, 1, nullptr), Error);
  std::string note;
  EXPECT_EQ(replay_compute("[]", rc, /*tolerance=*/true, 1, &note).layer_norm, "ops");
  EXPECT_NE(note.find("model.layer_norm = fused"), std::string::npos) << note;
}

// On a GPU (launch/gpu-check runs it; skipped here): the kernels give the CPU form's bits exactly,
// every output, both output and gradient types, and again on a second run.
// Every output of a GPU run bit for bit equal to the CPU form's (both undefined where neither has
// one: a plain layer norm's sum and branch gradient).
void expect_same_tensors(const std::vector<torch::Tensor>& gpu,
                         const std::vector<torch::Tensor>& cpu, const std::string& at) {
  const char* names[] = {"first", "second", "third", "fourth"};
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(gpu[i].defined(), cpu[i].defined()) << at << ": output " << names[i];
    if (cpu[i].defined()) {
      EXPECT_TRUE(torch::equal(gpu[i].cpu(), cpu[i])) << at << ": output " << names[i];
    }
  }
}
void expect_same(const model::LayerNormRows& gpu, const model::LayerNormRows& cpu,
                 const std::string& at) {
  expect_same_tensors({gpu.y, gpu.mean, gpu.rstd, gpu.sum}, {cpu.y, cpu.mean, cpu.rstd, cpu.sum},
                      at + " (y, mean, rstd, sum)");
}
void expect_same(const model::LayerNormGrads& gpu, const model::LayerNormGrads& cpu,
                 const std::string& at) {
  expect_same_tensors({gpu.dx, gpu.dweight, gpu.dbias, gpu.dbranch},
                      {cpu.dx, cpu.dweight, cpu.dbias, cpu.dbranch},
                      at + " (dx, dweight, dbias, dbranch)");
}

TEST(DeviceOpsCuda, FusedLayerNormKernels) {
  if (!libtorch_has_cuda() || !torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  for (auto type : {torch::kFloat32, torch::kBFloat16})
    for (auto [rows, C] :
         std::vector<std::pair<int64_t, int64_t>>{{5, 1}, {9, 33}, {130, 768}, {1000, 1600}}) {
      const Case c = random_case(rows, C, 2.0, 0.5, uint64_t(C));
      const auto dy = c.dy.to(type);
      // With the residual add fused in front: the branch in the output's type, as under
      // autocast, and with and without the sum's gradient from after the block.
      const auto branch = c.dy.flip(0).to(type), upstream = c.x.flip(1).contiguous();
      const auto want = model::fused_layer_norm_rows(c.x, c.w, c.b, type);
      const auto want_a = model::fused_add_layer_norm_rows(c.x, branch, c.w, c.b, type);
      const auto want_g = model::fused_layer_norm_grads(dy, c.x, c.w, want.mean, want.rstd);
      const auto want_ga = model::fused_add_layer_norm_grads(dy, upstream, want_a.sum, c.w,
                                                             want_a.mean, want_a.rstd, type);
      const auto want_gn = model::fused_add_layer_norm_grads(dy, torch::Tensor(), want_a.sum, c.w,
                                                             want_a.mean, want_a.rstd, type);
      const auto x = c.x.to(gpu), w = c.w.to(gpu), b = c.b.to(gpu), d = dy.to(gpu);
      for (int repeat = 0; repeat < 2; ++repeat) {
        const std::string at = std::to_string(rows) + "x" + std::to_string(C) + " " +
                               c10::toString(type) + ", run " + std::to_string(repeat + 1);
        const auto f = model::fused_layer_norm_rows(x, w, b, type);
        expect_same(f, want, at);
        expect_same(model::fused_layer_norm_grads(d, x, w, f.mean, f.rstd), want_g, at);
        const auto fa = model::fused_add_layer_norm_rows(x, branch.to(gpu), w, b, type);
        expect_same(fa, want_a, at + ", with the add");
        expect_same(model::fused_add_layer_norm_grads(d, upstream.to(gpu), fa.sum, w, fa.mean,
                                                      fa.rstd, type),
                    want_ga, at + ", with the add");
        expect_same(model::fused_add_layer_norm_grads(d, torch::Tensor(), fa.sum, w, fa.mean,
                                                      fa.rstd, type),
                    want_gn, at + ", with the add, no gradient of the sum");
      }
    }
}

}  // namespace
}  // namespace wit
