#include "trainer/model/layer_norm.h"

#include <ATen/autocast_mode.h>

#include <limits>

#include "core/error.h"
#include "trainer/model/kernels.h"
#include "trainer/model/layer_norm_rows.h"

#ifdef WIT_MODEL_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "trainer/model/layer_norm_kernels.h"
#endif

namespace wit::model {

namespace {

constexpr const char* kNormWhat = "fused layer norm";

void check_norm_rows(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  WIT_CHECK(
      x.dim() == 2 && x.is_contiguous() && x.scalar_type() == torch::kFloat32 && x.size(1) > 0,
      "fused layer norm: x must be a contiguous (rows, C) fp32 tensor, not {} {}",
      c10::toString(x.scalar_type()), c10::str(x.sizes()));
  WIT_CHECK(x.size(0) < std::numeric_limits<int32_t>::max(),
            "fused layer norm: {} rows, over a kernel grid", x.size(0));
  for (const auto* p : {&w, &b})
    WIT_CHECK(p->dim() == 1 && p->size(0) == x.size(1) && p->is_contiguous() &&
                  p->scalar_type() == torch::kFloat32 && p->device() == x.device(),
              "fused layer norm: the weight and bias must be {} contiguous fp32 values on x's "
              "device",
              x.size(1));
  require_kernels(x, kNormWhat);
}

void check_norm_type(torch::ScalarType t, const char* what) {
  WIT_CHECK(t == torch::kFloat32 || t == torch::kBFloat16,
            "fused layer norm: {} of type {}, not "
            "fp32 or bf16",
            what, c10::toString(t));
}

#ifdef WIT_MODEL_CUDA_KERNELS
ln::Type norm_kernel_type(torch::ScalarType t) {
  return t == torch::kBFloat16 ? ln::Type::bf16 : ln::Type::f32;
}
void check_norm_launch(const char* error, const char* what) {
  if (error) fail("fused layer norm: the {} kernels did not launch: {}", what, error);
}
#endif

// The CPU forms: each row's lanes in a loop, in the kernels' order (layer_norm_rows.h).
float lanes_tree(float* lanes) {
  for (int s = ln::kLanes / 2; s > 0; s /= 2)
    for (int t = 0; t < s; ++t) ln::tree_level(lanes, t, s);
  return lanes[0];
}

// With a residual add (sum non-null): sum = residual + branch first, and its rows normalised.
template <class Y, class Br>
void norm_forward_host(const float* x, const float* w, const float* b, int64_t rows, int64_t C,
                       Y* y, float* mean, float* rstd, const float* residual, const Br* branch,
                       float* sum) {
  float lanes[ln::kLanes];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    if (sum) {
      for (int64_t j = 0; j < C; ++j)
        sum[r * C + j] = ln::sum_at(residual[r * C + j], ln::load(branch + r * C, j));
      xr = sum + r * C;
    }
    for (int t = 0; t < ln::kLanes; ++t) lanes[t] = ln::lane_sum_x(xr, C, t);
    const float m = ln::mean_of(lanes_tree(lanes), C);
    for (int t = 0; t < ln::kLanes; ++t) lanes[t] = ln::lane_sum_sq(xr, C, t, m);
    const float s = ln::rstd_of(lanes_tree(lanes), C);
    for (int64_t j = 0; j < C; ++j) ln::store(y + r * C, j, ln::y_at(xr[j], m, s, w[j], b[j]));
    mean[r] = m;
    rstd[r] = s;
  }
}

// With a residual add: `upstream` added to dx, and the total also written to branch_grad.
template <class D, class Br>
void norm_backward_host(const D* dy, const float* x, const float* w, const float* mean,
                        const float* rstd, int64_t rows, int64_t C, float* dx, float* partials,
                        float* dw, float* db, const float* upstream, Br* branch_grad) {
  float lanes[ln::kLanes];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    const D* dr = dy + r * C;
    for (int t = 0; t < ln::kLanes; ++t) lanes[t] = ln::lane_sum_g(dr, w, C, t);
    const float sg = lanes_tree(lanes);
    for (int t = 0; t < ln::kLanes; ++t)
      lanes[t] = ln::lane_sum_gx(dr, w, xr, mean[r], rstd[r], C, t);
    const float sgx = lanes_tree(lanes);
    for (int64_t j = 0; j < C; ++j) {
      float v =
          ln::dx_at(ln::g_at(dr, w, j), ln::xhat_at(xr[j], mean[r], rstd[r]), sg, sgx, rstd[r], C);
      if (upstream) v = ln::total_grad_at(v, upstream[r * C + j]);
      dx[r * C + j] = v;
      if (branch_grad) ln::store(branch_grad + r * C, j, v);
    }
  }
  const int64_t n = ln::chunks(rows);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < C; ++j) ln::chunk_sums(dy, x, mean, rstd, rows, C, k, j, partials);
  for (int64_t j = 0; j < C; ++j) ln::chunks_total(partials, n, C, j, dw, db);
}

// A residual add's tensors (undefined: none), checked against the rows they join.
struct Add {
  torch::Tensor residual, branch;  // forward
  torch::Tensor upstream;          // backward: may stay undefined (no gradient from after)
  torch::ScalarType branch_type = torch::kFloat32;
};

// The forward, with or without the add: x is the rows, or the add's residual.
LayerNormRows forward_rows(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                           torch::ScalarType out, const Add* add) {
  check_norm_rows(x, w, b);
  check_norm_type(out, "the output");
  const int64_t rows = x.size(0), C = x.size(1);
  const auto f32 = x.options().dtype(torch::kFloat32);
  LayerNormRows r{kernel_output({rows, C}, x.options().dtype(out)), kernel_output({rows}, f32),
                  kernel_output({rows}, f32), torch::Tensor()};
  if (add) {
    check_norm_type(add->branch.scalar_type(), "the branch");
    WIT_CHECK(add->branch.sizes() == x.sizes() && add->branch.is_contiguous() &&
                  add->branch.device() == x.device(),
              "fused layer norm: the branch added must be a contiguous {} tensor on the "
              "residual's device",
              c10::str(x.sizes()));
    r.sum = kernel_output({rows, C}, f32);
  }
  std::vector<c10::IValue> in{x, w, b}, outs{r.y, r.mean, r.rstd};
  if (add) {
    in.push_back(add->branch);
    outs.push_back(r.sum);
  }
  const KernelScope scope("wit::kernel::layer_norm_forward", std::move(in), std::move(outs));
  float* sum = add ? r.sum.data_ptr<float>() : nullptr;
  const float* residual = add ? x.data_ptr<float>() : nullptr;
  if (x.is_cuda()) {
#ifdef WIT_MODEL_CUDA_KERNELS
    const c10::cuda::CUDAGuard on_device(x.device());
    ln::ResidualAdd a;
    if (add) {
      a.residual = residual;
      a.branch = add->branch.data_ptr();
      a.branch_type = norm_kernel_type(add->branch.scalar_type());
      a.sum = sum;
    }
    check_norm_launch(
        ln::forward_cuda(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), rows, C,
                         r.y.data_ptr(), norm_kernel_type(out), r.mean.data_ptr<float>(),
                         r.rstd.data_ptr<float>(), a, at::cuda::getCurrentCUDAStream().stream()),
        "forward");
#endif
  } else {
    with_kernel_data(r.y, [&](auto* y) {
      auto run = [&](const auto* branch) {
        norm_forward_host(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), rows, C, y,
                          r.mean.data_ptr<float>(), r.rstd.data_ptr<float>(), residual, branch,
                          sum);
      };
      if (add)
        with_kernel_data(add->branch, run);
      else
        run(static_cast<const float*>(nullptr));
    });
  }
  return r;
}

// The backward, with or without the add: x is the rows normalised (the add's sum).
LayerNormGrads backward_rows(const torch::Tensor& dy, const torch::Tensor& x,
                             const torch::Tensor& w, const torch::Tensor& mean,
                             const torch::Tensor& rstd, const Add* add) {
  check_norm_rows(x, w, w);
  check_norm_type(dy.scalar_type(), "the upstream gradient");
  const int64_t rows = x.size(0), C = x.size(1);
  WIT_CHECK(dy.sizes() == x.sizes() && dy.is_contiguous() && dy.device() == x.device(),
            "fused layer norm: the upstream gradient must be a contiguous {} tensor on x's device",
            c10::str(x.sizes()));
  for (const auto* s : {&mean, &rstd})
    WIT_CHECK(s->dim() == 1 && s->size(0) == rows && s->is_contiguous() &&
                  s->scalar_type() == torch::kFloat32 && s->device() == x.device(),
              "fused layer norm: {} rows need {} fp32 means and 1/stds on x's device", rows, rows);
  const bool upstream = add && add->upstream.defined();
  if (upstream)
    WIT_CHECK(add->upstream.sizes() == x.sizes() && add->upstream.is_contiguous() &&
                  add->upstream.scalar_type() == torch::kFloat32 &&
                  add->upstream.device() == x.device(),
              "fused layer norm: the sum's gradient must be a contiguous fp32 {} tensor on x's "
              "device",
              c10::str(x.sizes()));
  if (add) check_norm_type(add->branch_type, "the branch");
  const auto f32 = x.options().dtype(torch::kFloat32);
  LayerNormGrads g{kernel_output({rows, C}, f32), kernel_output({C}, f32), kernel_output({C}, f32),
                   torch::Tensor()};
  // An fp32 branch's gradient is dx itself; a bf16 one's is written beside it.
  const bool branch_grad = add && add->branch_type == torch::kBFloat16;
  if (branch_grad) g.dbranch = kernel_output({rows, C}, x.options().dtype(torch::kBFloat16));
  torch::Tensor partials = kernel_output({2 * ln::chunks(rows), C}, f32);
  std::vector<c10::IValue> in{dy, x, w, mean, rstd}, out{g.dx, g.dweight, g.dbias};
  if (upstream) in.push_back(add->upstream);
  if (branch_grad) out.push_back(g.dbranch);
  const KernelScope scope("wit::kernel::layer_norm_backward", std::move(in), std::move(out));
  const float* up = upstream ? add->upstream.data_ptr<float>() : nullptr;
  if (x.is_cuda()) {
#ifdef WIT_MODEL_CUDA_KERNELS
    const c10::cuda::CUDAGuard on_device(x.device());
    ln::ResidualAdd a;
    a.upstream = up;
    if (branch_grad) {
      a.branch_grad = g.dbranch.data_ptr();
      a.branch_type = ln::Type::bf16;
    }
    check_norm_launch(
        ln::backward_cuda(dy.data_ptr(), norm_kernel_type(dy.scalar_type()), x.data_ptr<float>(),
                          w.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(), rows,
                          C, g.dx.data_ptr<float>(), partials.data_ptr<float>(),
                          g.dweight.data_ptr<float>(), g.dbias.data_ptr<float>(), a,
                          at::cuda::getCurrentCUDAStream().stream()),
        "backward");
#endif
  } else {
    with_kernel_data(dy, [&](const auto* d) {
      auto run = [&](auto* branch) {
        norm_backward_host(d, x.data_ptr<float>(), w.data_ptr<float>(), mean.data_ptr<float>(),
                           rstd.data_ptr<float>(), rows, C, g.dx.data_ptr<float>(),
                           partials.data_ptr<float>(), g.dweight.data_ptr<float>(),
                           g.dbias.data_ptr<float>(), up, branch);
      };
      if (branch_grad)
        run(reinterpret_cast<uint16_t*>(g.dbranch.data_ptr<at::BFloat16>()));
      else
        run(static_cast<float*>(nullptr));
    });
  }
  if (add && !branch_grad) g.dbranch = g.dx;
  return g;
}

struct FusedLayerNorm : torch::autograd::Function<FusedLayerNorm> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& w, const torch::Tensor& b,
                               torch::ScalarType out) {
    auto rows = forward_rows(x, w, b, out, nullptr);
    ctx->save_for_backward({x, w});
    ctx->saved_data["mean"] = rows.mean;
    ctx->saved_data["rstd"] = rows.rstd;
    return rows.y;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto g =
        backward_rows(grads[0].contiguous(), saved[0], saved[1], ctx->saved_data["mean"].toTensor(),
                      ctx->saved_data["rstd"].toTensor(), nullptr);
    return {g.dx, g.dweight, g.dbias, torch::Tensor()};
  }
};

// Outputs (sum, y). Undefined incoming gradients stay undefined: a missing gradient of the sum is
// not added (0 + v would turn a -0 into +0, which the unfused graph never does).
struct FusedAddLayerNorm : torch::autograd::Function<FusedAddLayerNorm> {
  static torch::autograd::tensor_list forward(torch::autograd::AutogradContext* ctx,
                                              const torch::Tensor& residual,
                                              const torch::Tensor& branch, const torch::Tensor& w,
                                              const torch::Tensor& b, torch::ScalarType out) {
    ctx->set_materialize_grads(false);
    const Add add{residual, branch, torch::Tensor(), branch.scalar_type()};
    auto rows = forward_rows(residual, w, b, out, &add);
    ctx->save_for_backward({rows.sum, w});
    ctx->saved_data["mean"] = rows.mean;
    ctx->saved_data["rstd"] = rows.rstd;
    ctx->saved_data["branch_type"] = int64_t(branch.scalar_type());
    return {rows.sum, rows.y};
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto branch_type = torch::ScalarType(ctx->saved_data["branch_type"].toInt());
    if (!grads[1].defined()) {  // no gradient through the norm: the add's alone
      if (!grads[0].defined())
        return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
                torch::Tensor()};
      return {grads[0], grads[0].to(branch_type), torch::Tensor(), torch::Tensor(),
              torch::Tensor()};
    }
    const Add add{torch::Tensor(), torch::Tensor(),
                  grads[0].defined() ? grads[0].contiguous() : torch::Tensor(), branch_type};
    auto g =
        backward_rows(grads[1].contiguous(), saved[0], saved[1], ctx->saved_data["mean"].toTensor(),
                      ctx->saved_data["rstd"].toTensor(), &add);
    return {g.dx, g.dbranch, g.dweight, g.dbias, torch::Tensor()};
  }
};

}  // namespace

LayerNormRows fused_layer_norm_rows(const torch::Tensor& x, const torch::Tensor& w,
                                    const torch::Tensor& b, torch::ScalarType out) {
  return forward_rows(x, w, b, out, nullptr);
}

LayerNormRows fused_add_layer_norm_rows(const torch::Tensor& residual, const torch::Tensor& branch,
                                        const torch::Tensor& w, const torch::Tensor& b,
                                        torch::ScalarType out) {
  const Add add{residual, branch, torch::Tensor(), branch.scalar_type()};
  return forward_rows(residual, w, b, out, &add);
}

LayerNormGrads fused_layer_norm_grads(const torch::Tensor& dy, const torch::Tensor& x,
                                      const torch::Tensor& w, const torch::Tensor& mean,
                                      const torch::Tensor& rstd) {
  return backward_rows(dy, x, w, mean, rstd, nullptr);
}

LayerNormGrads fused_add_layer_norm_grads(const torch::Tensor& dy, const torch::Tensor& upstream,
                                          const torch::Tensor& sum, const torch::Tensor& w,
                                          const torch::Tensor& mean, const torch::Tensor& rstd,
                                          torch::ScalarType branch) {
  const Add add{torch::Tensor(), torch::Tensor(), upstream, branch};
  return backward_rows(dy, sum, w, mean, rstd, &add);
}

torch::Tensor fused_layer_norm(const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& b, torch::ScalarType out) {
  const int64_t C = x.size(-1);
  auto sizes = x.sizes().vec();
  const torch::Tensor y =
      FusedLayerNorm::apply(x.reshape({-1, C}).contiguous(), w.contiguous(), b.contiguous(), out);
  return y.view(sizes);
}

namespace {
// The fused forms' output type: what autocast makes the next matmul read, else x's.
torch::ScalarType norm_output(const torch::Tensor& x) {
  const auto device = x.device().type();
  return at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device)
                                                   : x.scalar_type();
}
}  // namespace

torch::Tensor layer_norm(const GPTConfig& cfg, const torch::Tensor& x, const torch::Tensor& w,
                         const torch::Tensor& b) {
  if (cfg.layer_norm == "fused") return fused_layer_norm(x, w, b, norm_output(x));
  WIT_CHECK(cfg.layer_norm == "ops", "model.layer_norm = {}", cfg.layer_norm);
  return torch::layer_norm(x, {cfg.n_embd}, w, b, 1e-5);
}

std::pair<torch::Tensor, torch::Tensor> fused_add_layer_norm(const torch::Tensor& residual,
                                                             const torch::Tensor& branch,
                                                             const torch::Tensor& w,
                                                             const torch::Tensor& b,
                                                             torch::ScalarType out) {
  const int64_t C = residual.size(-1);
  auto sizes = residual.sizes().vec();
  const auto outs = FusedAddLayerNorm::apply(residual.reshape({-1, C}).contiguous(),
                                             branch.reshape({-1, C}).contiguous(), w.contiguous(),
                                             b.contiguous(), out);
  return {outs[0].view(sizes), outs[1].view(sizes)};
}

std::pair<torch::Tensor, torch::Tensor> add_layer_norm(const GPTConfig& cfg,
                                                       const torch::Tensor& residual,
                                                       const torch::Tensor& branch,
                                                       const torch::Tensor& w,
                                                       const torch::Tensor& b) {
  if (cfg.layer_norm == "fused")
    return fused_add_layer_norm(residual, branch, w, b, norm_output(residual));
  torch::Tensor x = residual + branch;
  return {x, layer_norm(cfg, x, w, b)};
}

}  // namespace wit::model
