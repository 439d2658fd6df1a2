// The step's fixed-order arithmetic as the GPU runs it (torch operations: trainer/device_ops.h),
// checked on the CPU against the loops that define it: the weight sketch exactly, the norm and
// AdamW to rounding. And what start-up resolves on a CPU-only libtorch.
#include "trainer/device_ops.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "record/run_config.h"
#include "tests/train/fused_keys.h"
#include "trainer/compute.h"
#include "trainer/cpu_numerics.h"

namespace wit {
namespace {

torch::Tensor random_values(int64_t n, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randn({n}, gen) * 0.05;
}

TEST(DeviceOps, SketchByOpsEqualsTheDefinitionExactly) {
  auto v = random_values(5000, 1);
  // Bit patterns the definition must treat as plain 32-bit words.
  v[0] = -0.0f;
  v[1] = std::numeric_limits<float>::infinity();
  v[2] = std::numeric_limits<float>::quiet_NaN();
  v[3] = -std::numeric_limits<float>::denorm_min();
  // Ranges that start and end inside blocks, span several, or sit in one.
  for (auto [first, lo, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {0, 0, 5000}, {1000, 7, 3000}, {3 * 1024 - 5, 100, 10}, {1 << 20, 0, 4999}}) {
    const auto part = v.narrow(0, lo, n);
    const auto want = witness::sketch_weights(part.data_ptr<float>(), first, n);
    EXPECT_EQ(sketch_weights_by_ops(part, first), want) << "first " << first << " n " << n;
    EXPECT_EQ(sketch_weights(part, first), want);
  }
  // A changed bit changes the sketch (the test can fail).
  auto w = v.clone();
  w[4999] = std::nextafter(w[4999].item<float>(), 1.0f);
  EXPECT_NE(sketch_weights_by_ops(w, 0), witness::sketch_weights(v.data_ptr<float>(), 0, 5000));
}

// The largest sums the device form's fp64 products can meet (every bit set: both 16-bit halves
// 0xffff), and a range over more than one 16M-parameter piece, with a partial block at each end.
TEST(DeviceOps, SketchByOpsIsExactAtItsLimits) {
  auto ones = torch::full({3000}, -1, torch::kInt32).view(torch::kFloat32);  // 0xffffffff
  for (int64_t first : {int64_t(0), int64_t(517), int64_t(1) << 30}) {
    EXPECT_EQ(sketch_weights_by_ops(ones, first),
              witness::sketch_weights(ones.data_ptr<float>(), first, ones.numel()))
        << "first " << first;
  }
  const int64_t n = (int64_t(1) << 24) + 3000;
  auto big = random_values(n, 7);
  big.narrow(0, 0, 2048).view(torch::kInt32).fill_(-1);
  for (int64_t first : {int64_t(0), int64_t(300)}) {
    EXPECT_EQ(sketch_weights_by_ops(big, first),
              witness::sketch_weights(big.data_ptr<float>(), first, n))
        << "first " << first;
  }
}

TEST(DeviceOps, NormPartialsByOpsMatchTheDefinition) {
  const int64_t n = 3 * optim::kNormChunk + 123;
  auto g = random_values(n + 17, 2);
  const auto want = optim::grad_norm_partials(g.data_ptr<float>(), n);
  const auto got = grad_norm_partials_by_ops(g, n);
  ASSERT_EQ(got.size(), want.size());
  for (size_t c = 0; c < want.size(); ++c) EXPECT_NEAR(got[c], want[c], 1e-12 * want[c]);
  EXPECT_EQ(grad_norm_partials(g, n, /*fused=*/false), want);  // on the CPU: the definition
}

TEST(DeviceOps, AdamWByOpsMatchesTheDefinition) {
  const int64_t n = 2000;
  const std::vector<optim::DecaySegment> segs = {{0, 700, true}, {700, 1500, false}, {1500, 2000, true}};
  const optim::Hyper h{1e-3f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
  auto p1 = random_values(n, 3), m1 = torch::zeros({n}), v1 = torch::zeros({n});
  auto p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone();
  for (int64_t t = 1; t <= 5; ++t) {
    auto g = random_values(n, 10 + uint64_t(t));
    optim::adamw_update(p1.data_ptr<float>(), g.data_ptr<float>(), m1.data_ptr<float>(),
                        v1.data_ptr<float>(), n, segs, t, h);
    adamw_update_by_ops(p2, g, m2, v2, n, segs, t, h);
  }
  EXPECT_LT((p1 - p2).abs().max().item<float>(), 1e-7f) << (p1 - p2).abs().max().item<float>();
  EXPECT_LT((m1 - m2).abs().max().item<float>(), 2e-8f);  // a few ulps
  EXPECT_LT((v1 - v2).abs().max().item<float>(), 1e-9f);
  EXPECT_FALSE(torch::equal(p1, random_values(n, 3)));  // the update did something
}

// AdamW as one pass over a run of segments (the decay factor per element) gives every element
// the bits of the pass over its own segment; segments with a gap between them are updated run by
// run, with the same bits, and the gap is left alone.
TEST(DeviceOps, AdamWInOnePassEqualsItsSegmentsBitForBit) {
  const int64_t n = 3001;
  const std::vector<optim::DecaySegment> segs = {
      {0, 700, true}, {700, 701, false}, {701, 1555, true}, {1555, 2000, false}, {2000, 3001, true}};
  const optim::Hyper h{1e-3f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
  auto p1 = random_values(n, 3), m1 = torch::zeros({n}), v1 = torch::zeros({n});
  auto p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone();
  for (int64_t t = 1; t <= 4; ++t) {
    auto g = random_values(n, 20 + uint64_t(t));
    adamw_update_by_ops(p1, g, m1, v1, n, segs, t, h);
    for (const auto& s : segs) adamw_update_by_ops(p2, g, m2, v2, n, {s}, t, h);
  }
  EXPECT_TRUE(torch::equal(p1, p2));
  EXPECT_TRUE(torch::equal(m1, m2));
  EXPECT_TRUE(torch::equal(v1, v2));
  // The decay applies where it should: a decayed and an undecayed element differ in how.
  EXPECT_FALSE(torch::equal(p1, random_values(n, 3)));

  auto p3 = random_values(n, 3), m3 = torch::zeros({n}), v3 = torch::zeros({n});
  const std::vector<optim::DecaySegment> gap = {{0, 700, true}, {900, 3001, false}};
  adamw_update_by_ops(p3, random_values(n, 21), m3, v3, n, gap, 1, h);
  EXPECT_TRUE(torch::equal(p3.narrow(0, 700, 200), random_values(n, 3).narrow(0, 700, 200)));
  EXPECT_TRUE(torch::equal(m3.narrow(0, 700, 200), torch::zeros({200})));
  EXPECT_FALSE(torch::equal(p3.narrow(0, 0, 700), random_values(n, 3).narrow(0, 0, 700)));
  auto p4 = random_values(n, 3), m4 = torch::zeros({n}), v4 = torch::zeros({n});
  for (const auto& s : gap) adamw_update_by_ops(p4, random_values(n, 21), m4, v4, n, {s}, 1, h);
  EXPECT_TRUE(torch::equal(p3, p4));
  EXPECT_TRUE(torch::equal(v3, v4));
}

// The same implementations on a GPU, where there is one (ctest here has none: skipped;
// launch/gpu-check runs them): the sketch is exact there too, and every op repeats its bits.
TEST(DeviceOpsCuda, TheDeviceImplementationsOnAGpu) {
  if (!libtorch_has_cuda() || !torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  const int64_t n = 5 * optim::kNormChunk + 999;
  auto v = random_values(n, 4);
  EXPECT_EQ(sketch_weights(v.to(gpu), 12345), witness::sketch_weights(v.data_ptr<float>(), 12345, n));
  const auto want = optim::grad_norm_partials(v.data_ptr<float>(), n);
  const auto got = grad_norm_partials(v.to(gpu), n, /*fused=*/false);
  ASSERT_EQ(got.size(), want.size());
  for (size_t c = 0; c < want.size(); ++c) EXPECT_NEAR(got[c], want[c], 1e-12 * want[c]);
  EXPECT_EQ(grad_norm_partials(v.to(gpu), n, /*fused=*/false), got);  // the same bits again
  const std::vector<optim::DecaySegment> segs = {{0, n / 2, true}, {n / 2, n, false}};
  const optim::Hyper h{1e-3f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
  auto run = [&] {
    auto p = v.to(gpu), m = torch::zeros({n}, p.options()), s = torch::zeros({n}, p.options());
    for (int64_t t = 1; t <= 3; ++t)
      adamw_update(p, random_values(n, uint64_t(t)).to(gpu), m, s, n, segs, t, h, /*fused=*/false);
    return p.to(torch::kCPU);
  };
  EXPECT_TRUE(torch::equal(run(), run()));
}

// optim.kernels = fused on CPU tensors: its forms run the loops that define the arithmetic (the
// kernels' own, adamw_element.h; the GPU test below is what checks the kernels), and refuse what
// the kernels could not read.
TEST(DeviceOps, FusedOptimizerFormsRefuseWhatTheKernelsCannotRead) {
  const int64_t n = 2 * optim::kNormChunk + 77;
  auto g = random_values(n + 5, 5);
  EXPECT_EQ(grad_norm_partials_fused(g, n), optim::grad_norm_partials(g.data_ptr<float>(), n));
  const std::vector<optim::DecaySegment> segs = {
      {0, 900, true}, {900, 1300, false}, {1300, 2000, true}};
  const optim::Hyper h{1e-3f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
  auto p1 = random_values(2000, 3), m1 = torch::zeros({2000}), v1 = torch::zeros({2000});
  auto p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone();
  for (int64_t t = 1; t <= 3; ++t) {
    const auto gt = random_values(2000, 30 + uint64_t(t));
    optim::adamw_update(p1.data_ptr<float>(), gt.data_ptr<float>(), m1.data_ptr<float>(),
                        v1.data_ptr<float>(), 2000, segs, t, h);
    adamw_update_fused(p2, gt, m2, v2, 2000, segs, t, h);
  }
  EXPECT_TRUE(torch::equal(p1, p2) && torch::equal(m1, m2) && torch::equal(v1, v2));
  auto expect_refused = [](auto&& call, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_refused(
      [&] {
        adamw_update_fused(p2, g, m2, v2, 2000, {{0, 700, true}, {900, 2000, false}}, 1, h);
      },
      "segments with gaps (2 runs)");
  expect_refused([&] { grad_norm_partials_fused(g.to(torch::kFloat64), n); },
                 "fp32 contiguous tensors");
  expect_refused([&] { grad_norm_partials_fused(g.narrow(0, 0, 10), n); },
                 "fp32 contiguous tensors");
  auto strided = torch::zeros({4000}).slice(0, 0, 4000, 2);
  expect_refused([&] { adamw_update_fused(strided, strided, strided, strided, 2000, segs, 1, h); },
                 "fp32 contiguous tensors");
}

// Bit for bit, -0 and +0 apart (torch::equal and == on doubles take them as equal).
bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::equal(a.cpu().contiguous().view(torch::kInt32),
                      b.cpu().contiguous().view(torch::kInt32));
}
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// On a GPU (launch/gpu-check runs it; skipped here): the fused kernels give the CPU loops' bits,
// not merely their values to rounding. Chunks that end early, ranges shorter than their tensors
// (an FSDP shard's), segments that start past element 0, squares beyond fp32's range, updates
// with and without decay, an update longer than the kernel's grid (its grid-stride turns); and
// a GPU session names the kernels among its facts.
TEST(DeviceOpsCuda, FusedOptimizerKernelsGiveTheCpusBits) {
  if (!libtorch_has_cuda() || !torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  for (const int64_t n : {int64_t(1), int64_t(31), int64_t(300), 3 * optim::kNormChunk + 999}) {
    auto g = random_values(n + 40, uint64_t(n));
    // In the last full chunk only (the others' sums stay sensitive to order and to a partial
    // tile): a square far above fp32's range, which double holds.
    if (n > 2 * optim::kNormChunk) g[2 * optim::kNormChunk + 100] = 3e19f;
    EXPECT_TRUE(same_bits(grad_norm_partials_fused(g.to(gpu), n),
                          optim::grad_norm_partials(g.data_ptr<float>(), n)))
        << n;
  }
  const int64_t n = 2 * optim::kNormChunk + 12345, lo = 100, extra = 50;
  const std::vector<optim::DecaySegment> segs = {
      {lo, n / 3, true}, {n / 3, n / 2, false}, {n / 2, n, true}};
  const optim::Hyper h{6e-4f, 0.1f, 0.9f, 0.95f, 1e-8f, 1.0f};
  auto p = random_values(n + extra, 8), m = torch::zeros({n + extra}),
       v = torch::zeros({n + extra});
  auto pd = p.to(gpu), md = m.to(gpu), vd = v.to(gpu);
  // A −0 weight with no gradient stays −0 (−0·d − 0): an update that reordered it would not.
  p[lo + 9] = -0.0f;
  pd[lo + 9] = -0.0f;
  for (int64_t t = 1; t <= 4; ++t) {
    auto gt = random_values(n + extra, 40 + uint64_t(t)) * (t == 2 ? 1e4 : 1.0);
    gt[lo + 9] = 0.0f;
    optim::adamw_update(p.data_ptr<float>(), gt.data_ptr<float>(), m.data_ptr<float>(),
                        v.data_ptr<float>(), n, segs, t, h);
    adamw_update(pd, gt.to(gpu), md, vd, n, segs, t, h, /*fused=*/true);
  }
  EXPECT_TRUE(same_bits(pd, p));
  EXPECT_TRUE(same_bits(md, m));
  EXPECT_TRUE(same_bits(vd, v));
  EXPECT_TRUE(std::signbit(p[lo + 9].item<float>()));  // the −0 case is in the comparison
  EXPECT_TRUE(torch::equal(p.narrow(0, 0, lo), random_values(n + extra, 8).narrow(0, 0, lo)));

  // Past the kernel's 65,536 blocks of 256 threads: elements 16,777,216 on take a second turn.
  const int64_t big = (int64_t(1) << 24) + 4321;
  auto pb = random_values(big, 9), mb = random_values(big, 10) * 0.01,
       vb = random_values(big, 11).abs() * 1e-4, gb = random_values(big, 12);
  auto pbd = pb.to(gpu), mbd = mb.to(gpu), vbd = vb.to(gpu);
  // The second turn holds both: the decay ends 1,000 elements into it.
  const int64_t edge = (int64_t(1) << 24) + 1000;
  const std::vector<optim::DecaySegment> big_segs = {{0, edge, true}, {edge, big, false}};
  optim::adamw_update(pb.data_ptr<float>(), gb.data_ptr<float>(), mb.data_ptr<float>(),
                      vb.data_ptr<float>(), big, big_segs, 7, h);
  adamw_update(pbd, gb.to(gpu), mbd, vbd, big, big_segs, 7, h, /*fused=*/true);
  EXPECT_TRUE(same_bits(pbd, pb)) << "past the grid";
  EXPECT_TRUE(same_bits(mbd, mb)) << "past the grid";
  EXPECT_TRUE(same_bits(vbd, vb)) << "past the grid";

  auto cfg = config::Config::parse("{}", "test", run_schema(),
                                   {"train.device=cuda", "optim.kernels=fused"});
  const auto facts = device_facts(resolve_compute(cfg, 1, true));
  EXPECT_EQ(facts.value("optim_kernels", ""), "fused") << facts.dump();
  EXPECT_NE(facts.value("kernels", "").find("wit-optimizer-v1"), std::string::npos) << facts.dump();
}

// The sketch's kernel form on the CPU is the definition's loop; it refuses what the kernel
// cannot read, naming it.
TEST(DeviceOps, TheSketchKernelsFormIsTheDefinitionAndRefusesWhatItCannotRead) {
  auto v = random_values(3000, 6);
  EXPECT_EQ(sketch_weights_fused(v.narrow(0, 10, 2500), 777),
            witness::sketch_weights(v.data_ptr<float>() + 10, 777, 2500));
  for (const auto& [bad, text] : std::vector<std::pair<torch::Tensor, std::string>>{
           {v.view({30, 100}), "got 2-D Float"},
           {v.to(torch::kFloat64), "got 1-D Double"},
           {v.slice(0, 0, 3000, 2), "a contiguous 1-D fp32 tensor"}}) {
    try {
      sketch_weights_fused(bad, 0);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
}

// On a GPU (launch/gpu-check runs it, reported apart; skipped here): the sketch's kernel gives
// the definition's integers exactly. Ranges that start and end inside blocks, one parameter and
// none, every bit set, first indices past 2^30 and past 2^42 (block indices past 2^32), a view
// into a larger tensor (a DDP rank's slice), and more sketch blocks than the kernel has warps
// (each warp then takes several in turn); and the sketch a step calls, which checks the kernel
// on a thread's first call, gives them too, on that call and after.
TEST(DeviceOpsCuda, FusedWeightSketchIsTheDefinitionExactly) {
  if (!libtorch_has_cuda() || !torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  ASSERT_TRUE(sketch_kernel_built());
  const torch::Device gpu(torch::kCUDA, 0);
  auto v = random_values(5000, 1);
  v[0] = -0.0f;
  v[1] = std::numeric_limits<float>::infinity();
  v[2] = std::numeric_limits<float>::quiet_NaN();
  v[3] = -std::numeric_limits<float>::denorm_min();
  for (auto [first, lo, n] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{0, 0, 5000},
                                                          {1000, 7, 3000},
                                                          {3 * 1024 - 5, 100, 10},
                                                          {1 << 20, 0, 4999},
                                                          {5, 3, 1},
                                                          {1024, 0, 0},
                                                          {(int64_t(1) << 30) + 517, 0, 4000},
                                                          {(int64_t(1) << 42) + 1000, 9, 2500}}) {
    const auto part = v.narrow(0, lo, n);
    EXPECT_EQ(sketch_weights_fused(part.to(gpu), first),
              witness::sketch_weights(part.data_ptr<float>(), first, n))
        << "first " << first << " n " << n;
    EXPECT_EQ(sketch_weights_fused(v.to(gpu).narrow(0, lo, n), first),
              witness::sketch_weights(part.data_ptr<float>(), first, n))
        << "a view: first " << first << " n " << n;
  }
  EXPECT_THROW(sketch_weights_fused(v.to(gpu).slice(0, 0, 5000, 2), 0), Error);
  auto ones = torch::full({3000}, -1, torch::kInt32).view(torch::kFloat32);  // 0xffffffff
  EXPECT_EQ(sketch_weights_fused(ones.to(gpu), 517),
            witness::sketch_weights(ones.data_ptr<float>(), 517, 3000));
  const int64_t big_n = 3 * (int64_t(1) << 24) + 3000;  // 49,156 sketch blocks, 16,384 warps
  auto big = random_values(big_n, 7);
  const auto big_gpu = big.to(gpu);
  const auto want = witness::sketch_weights(big.data_ptr<float>(), 300, big_n);
  EXPECT_EQ(sketch_weights_fused(big_gpu, 300), want);
  // A new thread, whose first sketch checks the kernel (the check is kept per thread), and
  // finds it agrees: no warning, so the kernel, not its fallback, gives the second.
  testing::internal::CaptureStderr();
  std::thread([&] {
    EXPECT_EQ(sketch_weights(big_gpu, 300), want);  // the first call: kernel and check
    EXPECT_EQ(sketch_weights(big_gpu, 300), want);  // then the kernel alone
  }).join();
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warned.find("the weight sketch's kernel"), std::string::npos) << warned;
  // A changed bit changes the sketch (the comparison can fail).
  auto w = big.clone();
  w[big_n - 1] = std::nextafter(w[big_n - 1].item<float>(), 1.0f);
  EXPECT_NE(sketch_weights_fused(w.to(gpu), 300), want);
}

TEST(Compute, ResolvesToTheCpuWhereNoGpuIsVisible) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible";
  auto cfg = config_with({"model.attention=auto"});
  const Compute c = resolve_compute(cfg, 1, true);
  EXPECT_TRUE(c.device.is_cpu());
  EXPECT_FALSE(c.bf16);
  EXPECT_EQ(c.attention, "math");
  // auto is committed as what it resolved to, and math is what a committed config leaves out.
  EXPECT_EQ(cfg.get_string("model.attention"), "math");
  EXPECT_EQ(committed_yaml(cfg), committed_yaml(config_with({})));
  const auto facts = device_facts(c);
  EXPECT_EQ(facts["device"], "cpu");
  // This binary pins its CPU numerics (tests/pinned_gtest_main.cpp), as wit does.
  if (cpu_runs_pinned_level()) {
    EXPECT_EQ(facts["numerics"], "portable") << facts.dump();
    EXPECT_EQ(facts["aten"], "AVX2") << facts.dump();
    EXPECT_EQ(facts["mkl_cbwr"], "0x10003") << facts.dump();  // MKL's COMPATIBLE branch, strict
  }
}

// The sessions text a run's log carries is unsigned: fields of other types are taken as absent
// when the replay chooses its numerics, never thrown on.
TEST(Compute, ReplayIgnoresSessionFieldsOfOtherTypes) {
  const RunConfig rc = run_config_from(config::Config::parse("{}", "test", run_schema(), {}));
  for (const char* sessions :
       {R"([{"compute": {"device": 5}, "versions": {"libtorch": 2}}])",
        R"([{"compute": {"device": "cuda"}, "versions": {"libtorch": 2}}])", R"(["x", 3])"})
    try {  // a GPU run on this CPU may be refused, in words: a wit::Error, nothing else
      replay_compute(sessions, rc, /*tolerance=*/true, 1, nullptr);
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << sessions << ": " << e.what();
    }
}

TEST(Compute, RefusesWhatTheCpuCannotRun) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible";
  auto expect_error = [](std::vector<std::string> sets, const std::string& text) {
    auto cfg = config_with(sets);
    try {
      resolve_compute(cfg, 1, true);
      ADD_FAILURE() << "accepted: " << sets.front();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error({"train.device=cuda"}, "no GPU is visible");
  expect_error({"train.precision=bf16"}, "bf16 runs on CUDA only");
  expect_error({"model.attention=flash"}, "model.attention = flash: its flash kernel runs on CUDA only");
}

// optim.kernels = fused is the CPU's own arithmetic: the CPU accepts it and computes its loops,
// a run commits it (only when fused), and a CPU run that commits it replays exactly on the CPU.
TEST(Compute, TheFusedOptimizerIsCommittedAndTheCpuComputesIt) {
  auto cfg = config_with({"optim.kernels=fused", "train.device=cpu"});
  const Compute c = resolve_compute(cfg, 1, true);
  EXPECT_TRUE(c.device.is_cpu());
  EXPECT_TRUE(c.fused_optimizer());
  expect_committed_only_when_fused("optim.kernels");
  auto plain = config_with({});  // a CPU session's facts are the same either way
  EXPECT_EQ(device_facts(c), device_facts(resolve_compute(plain, 1, true)));
  const RunConfig rc = run_config_from(cfg);
  std::string note;
  const Compute replay = replay_compute("[]", rc, /*tolerance=*/false, 1, &note);
  EXPECT_TRUE(replay.device.is_cpu());
  EXPECT_EQ(replay.optim_kernels, "fused");
  EXPECT_EQ(note, "");
  // Beside a fused kernel the CPU does not compute, that one still has no exact replay.
  const RunConfig both = run_config_from(
      config_with({"optim.kernels=fused", "model.cross_entropy=fused", "train.device=cpu"}));
  EXPECT_THROW(replay_compute("[]", both, /*tolerance=*/false, 1, nullptr), Error);
  replay_compute("[]", both, /*tolerance=*/true, 1, &note);
  EXPECT_NE(note.find("model.cross_entropy = fused"), std::string::npos) << note;
  EXPECT_EQ(note.find("optim.kernels"), std::string::npos) << note;
}

TEST(Compute, ACommittedConfigNamesItsKernel) {
  auto flash = config_with({"model.attention=flash", "train.precision=bf16"});
  const std::string text = committed_yaml(flash);
  EXPECT_NE(text.find("attention: \"flash\""), std::string::npos);
  EXPECT_NE(text.find("precision: \"bf16\""), std::string::npos);
  EXPECT_EQ(committed_yaml(parse_committed(text, "test")), text);
  EXPECT_THROW(committed_yaml(config_with({"model.attention=auto"})), Error);
}

}  // namespace
}  // namespace wit
