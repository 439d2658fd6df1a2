#include "trainer/device_ops.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "trainer/host_read.h"
#include "trainer/model/kernels.h"

#if defined(WIT_OPTIM_CUDA_KERNELS) || defined(WIT_SKETCH_CUDA_KERNEL)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif
#ifdef WIT_OPTIM_CUDA_KERNELS
#include "trainer/optim/adamw_kernels.h"
#endif
#ifdef WIT_SKETCH_CUDA_KERNEL
#include "trainer/sketch_kernel.h"
#endif

namespace wit {

std::vector<double> grad_norm_partials(const torch::Tensor& g, int64_t n, bool fused) {
  if (g.is_cpu()) return optim::grad_norm_partials(g.data_ptr<float>(), n);
  return fused ? grad_norm_partials_fused(g, n) : grad_norm_partials_by_ops(g, n);
}

std::vector<double> grad_norm_partials_by_ops(const torch::Tensor& g, int64_t n) {
  WIT_CHECK(n <= g.numel(), "norm of {} elements of a tensor of {}", n, g.numel());
  const int64_t C = optim::kNormChunk, chunks = (n + C - 1) / C;
  constexpr int64_t kChunksPerPiece = 256;  // 16M elements: bounds the fp64 temporary
  // Every piece's sums stay on the device until the end: one copy to the host per call.
  auto sums = torch::empty({chunks}, g.options().dtype(torch::kFloat64));
  for (int64_t c0 = 0; c0 < chunks; c0 += kChunksPerPiece) {
    const int64_t c1 = std::min(chunks, c0 + kChunksPerPiece);
    const int64_t lo = c0 * C, hi = std::min(n, c1 * C);
    auto x = torch::zeros({(c1 - c0) * C}, g.options().dtype(torch::kFloat64));
    x.narrow(0, 0, hi - lo).copy_(g.narrow(0, lo, hi - lo));
    // Squares in double, summed per chunk over a fixed shape: no atomics, the same order on
    // every call.
    sums.narrow(0, c0, c1 - c0).copy_((x * x).view({c1 - c0, C}).sum(1));
  }
  const auto host = to_host(sums);
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + chunks);
}

float clip_grads(torch::Tensor& g, int64_t n, double norm, float clip) {
  if (g.is_cpu()) return optim::clip_grads(g.data_ptr<float>(), n, norm, clip);
  const float f = optim::clip_grads(nullptr, 0, norm, clip);  // the factor alone
  if (f != 1.0f) g.narrow(0, 0, n).mul_(f);
  return f;
}

void adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                  int64_t n, const std::vector<optim::DecaySegment>& segments, int64_t t,
                  const optim::Hyper& h, bool fused) {
  if (p.is_cpu())
    return optim::adamw_update(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(),
                               v.data_ptr<float>(), n, segments, t, h);
  if (fused) return adamw_update_fused(p, g, m, v, n, segments, t, h);
  adamw_update_by_ops(p, g, m, v, n, segments, t, h);
}

namespace {

// The segments clipped to [0, n), joined into runs [lo, hi) of segments that follow each other
// without a gap (one run for every layout wit has).
std::vector<std::pair<int64_t, int64_t>> contiguous_runs(
    const std::vector<optim::DecaySegment>& segments, int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const auto& s : segments) {
    const int64_t sb = std::max<int64_t>(0, s.begin), se = std::min(n, s.end);
    if (sb >= se) continue;
    if (!runs.empty() && runs.back().second == sb) runs.back().second = se;
    else runs.emplace_back(sb, se);
  }
  return runs;
}

// Which elements of [lo, hi) decay, as a bool tensor on `device`: built once per layout and
// kept (the segments are the model's, the same every step).
const torch::Tensor& decay_mask(const std::vector<optim::DecaySegment>& segments, int64_t lo,
                                int64_t hi, const torch::Device& device) {
  struct Cached {
    std::vector<std::tuple<int64_t, int64_t, bool>> key;
    int64_t lo = 0, hi = 0;
    torch::Device device{torch::kCPU};
    torch::Tensor mask;
  };
  static thread_local Cached cache;
  std::vector<std::tuple<int64_t, int64_t, bool>> key;
  for (const auto& s : segments) key.emplace_back(s.begin, s.end, s.decay);
  if (!cache.mask.defined() || cache.key != key || cache.lo != lo || cache.hi != hi ||
      cache.device != device) {
    auto mask = torch::zeros({hi - lo}, torch::kBool);
    for (const auto& s : segments) {
      const int64_t sb = std::max(lo, s.begin), se = std::min(hi, s.end);
      if (sb < se && s.decay) mask.narrow(0, sb - lo, se - sb).fill_(true);
    }
    cache = {std::move(key), lo, hi, device, mask.to(device)};
  }
  return cache.mask;
}

}  // namespace

// Elementwise, so one pass over a run of segments gives each element the bits a pass per
// segment gives it: the decay factor is k.decay or 1 (x·1 = x exactly). One pass is about a
// dozen kernels a step; a pass per segment was a dozen per segment (~8 segments per layer).
// Elements outside every segment (a gap between runs) are left alone.
void adamw_update_by_ops(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                         torch::Tensor& v, int64_t n,
                         const std::vector<optim::DecaySegment>& segments, int64_t t,
                         const optim::Hyper& h) {
  torch::NoGradGuard no_grad;
  const auto runs = contiguous_runs(segments, n);
  if (runs.empty()) return;
  int64_t lo = runs.front().first, hi = runs.front().second;
  for (const auto& [rb, re] : runs) lo = std::min(lo, rb), hi = std::max(hi, re);
  const auto& mask = decay_mask(segments, lo, hi, p.device());
  const optim::AdamWScalars k = optim::adamw_scalars(h, t);
  for (const auto& [rb, re] : runs) {
    auto ps = p.narrow(0, rb, re - rb), ms = m.narrow(0, rb, re - rb), vs = v.narrow(0, rb, re - rb);
    const auto gs = g.narrow(0, rb, re - rb);
    ms.mul_(k.b1).add_(gs, k.one_b1);       // m = b1·m + (1−b1)·g
    vs.mul_(k.b2).add_(gs * gs, k.one_b2);  // v = b2·v + (1−b2)·g²
    auto denom = vs.sqrt().div_(k.bc2_sqrt).add_(k.eps);
    ps.mul_(at::where(mask.narrow(0, rb - lo, re - rb), at::Scalar(k.decay), at::Scalar(1.0f)));
    ps.sub_(ms / denom, k.step_size);
  }
}

bool fused_optimizer_built() {
#ifdef WIT_OPTIM_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

namespace {

// The fused forms read fp32, contiguous tensors on one device, from element 0.
void check_fused_operands(std::initializer_list<const torch::Tensor*> ts, int64_t n,
                          const char* what) {
  const torch::Tensor& first = **ts.begin();
  for (const torch::Tensor* t : ts) {
    WIT_CHECK(t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->numel() >= n &&
                  t->device() == first.device(),
              "{}: {} elements of fp32 contiguous tensors on one device (got {} of {} on {})", what,
              n, t->numel(), c10::toString(t->scalar_type()), t->device().str());
  }
#ifndef WIT_OPTIM_CUDA_KERNELS
  if (first.is_cuda())
    fail("{} (optim.kernels = fused): this wit was built without its CUDA kernels (docs/gpu.md)",
         what);
#endif
}

#ifdef WIT_OPTIM_CUDA_KERNELS
void check_launch(const char* error, const char* what) {
  if (error) fail("{} (optim.kernels = fused): its kernel did not launch: {}", what, error);
}
#endif

}  // namespace

std::vector<double> grad_norm_partials_fused(const torch::Tensor& g, int64_t n) {
  check_fused_operands({&g}, n, "gradient norm");
  const int64_t chunks = (n + optim::kNormChunk - 1) / optim::kNormChunk;
  if (g.is_cpu()) {
    const model::KernelScope scope("wit::kernel::grad_norm_partials", {g}, {});
    return optim::grad_norm_partials(g.data_ptr<float>(), n);
  }
  auto sums = model::kernel_output({chunks}, g.options().dtype(torch::kFloat64));
  {
    const model::KernelScope scope("wit::kernel::grad_norm_partials", {g}, {sums});
#ifdef WIT_OPTIM_CUDA_KERNELS
    const c10::cuda::CUDAGuard on_device(g.device());
    check_launch(optim::cuda::grad_norm_partials(g.data_ptr<float>(), n, optim::kNormChunk,
                                                 sums.data_ptr<double>(),
                                                 at::cuda::getCurrentCUDAStream().stream()),
                 "gradient norm");
#endif
  }
  const auto host = to_host(sums);
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + chunks);
}

// One kernel over the span of the segments' runs, each element's decay from the layout's mask
// (one byte an element). Elements of a gap between runs would be updated too: the layouts have
// none, and the update refuses them.
void adamw_update_fused(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                        torch::Tensor& v, int64_t n,
                        const std::vector<optim::DecaySegment>& segments, int64_t t,
                        const optim::Hyper& h) {
  check_fused_operands({&p, &g, &m, &v}, n, "AdamW update");
  const auto runs = contiguous_runs(segments, n);
  if (runs.empty()) return;
  WIT_CHECK(runs.size() == 1, "AdamW update (optim.kernels = fused): segments with gaps ({} runs)",
            runs.size());
  const auto [lo, hi] = runs.front();
  const auto& mask = decay_mask(segments, lo, hi, p.device());
  const auto ps = p.narrow(0, lo, hi - lo), ms = m.narrow(0, lo, hi - lo),
             vs = v.narrow(0, lo, hi - lo), gs = g.narrow(0, lo, hi - lo);
  const model::KernelScope scope("wit::kernel::adamw_update", {ps, gs, ms, vs, mask}, {ps, ms, vs});
  if (p.is_cpu())
    return optim::adamw_update(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(),
                               v.data_ptr<float>(), n, segments, t, h);
#ifdef WIT_OPTIM_CUDA_KERNELS
  const c10::cuda::CUDAGuard on_device(p.device());
  check_launch(optim::cuda::adamw_update(ps.data_ptr<float>(), gs.data_ptr<float>(),
                                         ms.data_ptr<float>(), vs.data_ptr<float>(),
                                         mask.data_ptr<bool>(), hi - lo, optim::adamw_scalars(h, t),
                                         at::cuda::getCurrentCUDAStream().stream()),
               "AdamW update");
#endif
}

namespace {

// "0123abcd 4567ef01 ...": a sketch's lanes, for messages.
std::string lanes_hex(const witness::WeightSketch& s) {
  std::string out;
  for (uint32_t l : s.lanes) out += fmt::format("{}{:08x}", out.empty() ? "" : " ", l);
  return out;
}

#ifdef WIT_SKETCH_CUDA_KERNEL
// The table T (record/sketch.h) on `device`, copied there once per device and thread.
torch::Tensor sketch_table_on(const torch::Device& device) {
  thread_local std::vector<std::pair<torch::Device, torch::Tensor>> tables;
  for (const auto& [d, t] : tables)
    if (d == device) return t;
  auto host = torch::empty({witness::kSketchLanes * witness::kSketchBlock}, torch::kInt32);
  for (int l = 0; l < witness::kSketchLanes; ++l)
    std::memcpy(host.data_ptr<int32_t>() + l * witness::kSketchBlock, witness::sketch_table(l),
                witness::kSketchBlock * sizeof(uint32_t));
  tables.emplace_back(device, host.to(device));
  return tables.back().second;
}
#endif

}  // namespace

witness::WeightSketch sketch_weights(const torch::Tensor& values, int64_t first) {
  if (values.is_cpu())
    return witness::sketch_weights(values.contiguous().data_ptr<float>(), first, values.numel());
  if (!sketch_kernel_built() || !values.is_cuda() || values.dim() != 1 ||
      values.scalar_type() != torch::kFloat32 || !values.is_contiguous())
    return sketch_weights_by_ops(values, first);
  // The kernel, checked once per device and thread against the operations' form (both are
  // exact), on parameters enough to span blocks (a run sketches the same range every step).
  thread_local std::vector<std::pair<torch::Device, bool>> kernel_agrees;
  const auto known = std::find_if(kernel_agrees.begin(), kernel_agrees.end(),
                                  [&](const auto& d) { return d.first == values.device(); });
  if (known != kernel_agrees.end())
    return known->second ? sketch_weights_fused(values, first)
                         : sketch_weights_by_ops(values, first);
  const auto by_ops = sketch_weights_by_ops(values, first);
  if (values.numel() < 2 * witness::kSketchBlock) return by_ops;
  std::string fault;
  try {
    const auto by_kernel = sketch_weights_fused(values, first);
    if (by_kernel != by_ops)
      fault = fmt::format("gave {} where its definition gives {}", lanes_hex(by_kernel),
                          lanes_hex(by_ops));
  } catch (const Error& e) {
    fault = fmt::format("failed: {}", e.what());  // e.g. no kernel image for this GPU
  }
  kernel_agrees.emplace_back(values.device(), fault.empty());
  if (!fault.empty())
    fmt::print(stderr,
               "wit: warning: the weight sketch's kernel {} on {}; this process sketches with "
               "torch operations from now on (slower, the same fingerprints). Please report it "
               "with this GPU's model.\n",
               fault, values.device().str());
  return by_ops;
}

bool sketch_kernel_built() {
#ifdef WIT_SKETCH_CUDA_KERNEL
  return true;
#else
  return false;
#endif
}

witness::WeightSketch sketch_weights_fused(const torch::Tensor& values, int64_t first) {
  WIT_CHECK(values.dim() == 1 && values.scalar_type() == torch::kFloat32 && values.is_contiguous(),
            "the weight sketch's kernel reads a contiguous 1-D fp32 tensor (got {}-D {})",
            values.dim(), c10::toString(values.scalar_type()));
  WIT_CHECK(first >= 0, "the weight sketch of parameters from index {}", first);
  if (values.is_cpu()) {
    const model::KernelScope scope("wit::kernel::weight_sketch", {values}, {});
    return witness::sketch_weights(values.data_ptr<float>(), first, values.numel());
  }
#ifndef WIT_SKETCH_CUDA_KERNEL
  fail("the weight sketch's kernel: this wit was built without it (docs/gpu.md)");
#else
  const c10::cuda::CUDAGuard on_device(values.device());
  auto lanes = model::kernel_output({witness::kSketchLanes}, values.options().dtype(torch::kInt32));
  {
    const model::KernelScope scope("wit::kernel::weight_sketch", {values}, {lanes});
    cuda::SketchKeys keys;
    for (int l = 0; l < witness::kSketchLanes; ++l) keys.key[l] = witness::sketch_block_key(l);
    const char* error = cuda::weight_sketch(
        values.data_ptr<float>(), first, values.numel(),
        reinterpret_cast<const uint32_t*>(sketch_table_on(values.device()).data_ptr<int32_t>()),
        keys, reinterpret_cast<uint32_t*>(lanes.data_ptr<int32_t>()),
        at::cuda::getCurrentCUDAStream().stream());
    if (error) fail("the weight sketch's kernel did not launch: {}", error);
  }
  const auto host = to_host(lanes);
  witness::WeightSketch out;
  for (int l = 0; l < witness::kSketchLanes; ++l)
    out.lanes[size_t(l)] = uint32_t(host.data_ptr<int32_t>()[l]);
  return out;
#endif
}

// Lane l's sum over a block b is dot_l(b) = Σ_j T_l[j]·u[b,j] (mod 2^32). With T = T_hi·2^16 + T_lo
// and u = u_hi·2^16 + u_lo (16-bit halves), T·u ≡ (T_hi·u_lo + T_lo·u_hi)·2^16 + T_lo·u_lo, so
// dot_l(b) ≡ (cross mod 2^16)·2^16 + lolo with cross = Σ_j (T_hi·u_lo + T_lo·u_hi) and
// lolo = Σ_j T_lo·u_lo. Both are matrix products of integers below 2^16: every product is below
// 2^32 and every partial sum of the 2·1024 terms below 2^43, exact in fp64 whatever order or
// blocking the BLAS uses. So two fp64 matmuls over the block's halves give them exactly, one
// read of the parameters instead of a dozen int64 passes per lane. The rest is on (blocks x 4)
// int64, where every product stays below 2^63: a 32-bit factor times a 16-bit half.
witness::WeightSketch sketch_weights_by_ops(const torch::Tensor& values, int64_t first) {
  using witness::kSketchBlock;
  using witness::kSketchLanes;
  torch::NoGradGuard no_grad;
  witness::WeightSketch out;
  const int64_t n = values.numel();
  if (n == 0) return out;
  WIT_CHECK(values.scalar_type() == torch::kFloat32, "the sketch reads fp32 parameters");
  const auto device = values.device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  constexpr int64_t kLow16 = 0xffff, kLow32 = 0xffffffffLL, kTwo16 = 65536;
  constexpr int64_t L = kSketchLanes;
  // W_lo (1024 x 2L) multiplies u_lo: columns [0, L) T_lo (for lolo), [L, 2L) T_hi (cross);
  // W_hi multiplies u_hi: columns [L, 2L) T_lo (cross), zero elsewhere.
  std::vector<double> w_lo(size_t(kSketchBlock * 2 * L)), w_hi(w_lo.size(), 0.0);
  for (int64_t j = 0; j < kSketchBlock; ++j)
    for (int64_t l = 0; l < L; ++l) {
      const uint32_t t = witness::sketch_table(int(l))[j];
      w_lo[size_t(j * 2 * L + l)] = double(t & 0xffffu);
      w_lo[size_t(j * 2 * L + L + l)] = double(t >> 16);
      w_hi[size_t(j * 2 * L + L + l)] = double(t & 0xffffu);
    }
  const auto W_lo = torch::tensor(w_lo, torch::kFloat64).view({kSketchBlock, 2 * L}).to(f64);
  const auto W_hi = torch::tensor(w_hi, torch::kFloat64).view({kSketchBlock, 2 * L}).to(f64);

  constexpr int64_t kBlocksPerPiece = 1 << 14;  // 16M parameters per piece
  // Each lane's sum mod 2^32 stays on the device: one copy to the host per call.
  auto acc = torch::zeros({L}, i64);
  const int64_t b_first = first / kSketchBlock;
  const int64_t b_end = (first + n + kSketchBlock - 1) / kSketchBlock;
  for (int64_t pb = b_first; pb < b_end; pb += kBlocksPerPiece) {
    const int64_t pe = std::min(b_end, pb + kBlocksPerPiece), nb = pe - pb;
    const int64_t lo = std::max(first, pb * kSketchBlock);
    const int64_t hi = std::min(first + n, pe * kSketchBlock);
    // u: the parameters' bit patterns, zero outside the range; its halves as fp64.
    auto u = torch::zeros({nb * kSketchBlock}, values.options().dtype(torch::kInt32));
    u.narrow(0, lo - pb * kSketchBlock, hi - lo)
        .copy_(values.narrow(0, lo - first, hi - lo).view(torch::kInt32));
    const auto u_lo = u.bitwise_and(kLow16).to(torch::kFloat64).view({nb, kSketchBlock});
    const auto u_hi =
        u.bitwise_right_shift(16).bitwise_and(kLow16).to(torch::kFloat64).view({nb, kSketchBlock});
    const auto sums = u_lo.mm(W_lo).addmm_(u_hi, W_hi).to(torch::kInt64);  // (nb, 2L), exact
    const auto lolo = sums.narrow(1, 0, L), cross = sums.narrow(1, L, L);
    const auto dot = (cross.bitwise_and(kLow16) * kTwo16 + lolo).bitwise_and(kLow32);  // (nb, L)
    // Every block's coefficient S_l(b), in one copy to the device.
    std::vector<int64_t> s(static_cast<size_t>(nb * L));
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t l = 0; l < L; ++l)
        s[size_t(b * L + l)] = int64_t(witness::sketch_block_coefficient(int(l), uint64_t(pb + b)));
    const auto S = torch::tensor(s, torch::kInt64).view({nb, L}).to(i64);
    // dot·S mod 2^32 = dot·S_lo + ((dot·S_hi) mod 2^16)·2^16  (mod 2^32)
    const auto term = (dot * S.bitwise_and(kLow16) +
                       (dot * S.div(kTwo16, "trunc")).bitwise_and(kLow16) * kTwo16)
                          .bitwise_and(kLow32);
    // A piece's sum is below 2^46 and acc below 2^32: no overflow in int64.
    acc.add_(term.sum(0)).bitwise_and_(kLow32);
  }
  const auto host = to_host(acc);
  for (int l = 0; l < kSketchLanes; ++l) out.lanes[size_t(l)] = uint32_t(host.data_ptr<int64_t>()[l]);
  return out;
}

}  // namespace wit
