#include "trainer/model/cross_entropy.h"

#include <limits>
#include <type_traits>

#include "core/error.h"
#include "trainer/model/cross_entropy_rows.h"
#include "trainer/model/kernels.h"

#ifdef WIT_MODEL_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "trainer/model/cross_entropy_kernels.h"
#endif

namespace wit::model {

namespace {

void check_rows(const torch::Tensor& logits, const torch::Tensor& targets) {
  WIT_CHECK(logits.dim() == 2 && logits.is_contiguous(),
            "fused cross-entropy: logits must be a contiguous (rows, V) tensor");
  WIT_CHECK(logits.scalar_type() == torch::kFloat32 || logits.scalar_type() == torch::kBFloat16,
            "fused cross-entropy: logits of type {}, not fp32 or bf16",
            c10::toString(logits.scalar_type()));
  WIT_CHECK(
      targets.dim() == 1 && targets.is_contiguous() && targets.scalar_type() == torch::kInt64 &&
          targets.size(0) == logits.size(0) && targets.device() == logits.device(),
      "fused cross-entropy: targets must be {} int64 values on the logits' device", logits.size(0));
  WIT_CHECK(logits.size(0) < std::numeric_limits<int32_t>::max(),
            "fused cross-entropy: {} rows, over a kernel grid", logits.size(0));
}

// The CPU form: each row's lanes in a loop, in the kernels' order (cross_entropy_rows.h).
template <class T>
void forward_host(const T* logits, const int64_t* targets, int64_t rows, int64_t V, float* loss,
                  float* lse) {
  ce::MaxSum lanes[ce::kRowLanes];
  for (int64_t r = 0; r < rows; ++r) {
    const T* x = logits + r * V;
    for (int t = 0; t < ce::kRowLanes; ++t) lanes[t] = ce::lane_partial(x, V, t);
    for (int s = ce::kRowLanes / 2; s > 0; s /= 2)
      for (int t = 0; t < s; ++t) ce::tree_level(lanes, t, s);
    ce::row_result(lanes[0], x, V, targets[r], &loss[r], &lse[r]);
  }
}

template <class T>
void backward_host(const T* logits, const int64_t* targets, const float* lse, const float* grad,
                   int64_t rows, int64_t V, T* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float g = ce::row_grad(targets[r], V, grad[r]);
    for (int64_t j = 0; j < V; ++j)
      kernel::store(out + r * V, j,
                    ce::grad_at(kernel::load(logits + r * V, j), lse[r], j == targets[r], g));
  }
}

#ifdef WIT_MODEL_CUDA_KERNELS
ce::LogitType logit_type(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? ce::LogitType::bf16 : ce::LogitType::f32;
}
void check_launch(const char* error, const char* what) {
  if (error) fail("fused cross-entropy: the {} kernel did not launch: {}", what, error);
}
#endif

struct FusedCrossEntropy : torch::autograd::Function<FusedCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets) {
    auto [loss, lse] = fused_cross_entropy_rows(logits, targets);
    ctx->save_for_backward({logits, targets, lse});
    return loss;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    return {fused_cross_entropy_grad(saved[0], saved[1], saved[2], grads[0]), torch::Tensor()};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> fused_cross_entropy_rows(const torch::Tensor& logits,
                                                                 const torch::Tensor& targets) {
  check_rows(logits, targets);
  require_kernels(logits, "fused cross-entropy");
  const int64_t rows = logits.size(0), V = logits.size(1);
  const auto f32 = logits.options().dtype(torch::kFloat32);
  torch::Tensor loss = kernel_output({rows}, f32), lse = kernel_output({rows}, f32);
  const KernelScope scope("wit::kernel::cross_entropy_forward", {logits, targets}, {loss, lse});
  if (logits.is_cuda()) {
#ifdef WIT_MODEL_CUDA_KERNELS
    const c10::cuda::CUDAGuard on_device(logits.device());
    check_launch(ce::forward_cuda(logits.data_ptr(), logit_type(logits),
                                  targets.data_ptr<int64_t>(), rows, V, loss.data_ptr<float>(),
                                  lse.data_ptr<float>(), at::cuda::getCurrentCUDAStream().stream()),
                 "forward");
#endif
  } else {
    with_kernel_data(logits, [&](const auto* x) {
      forward_host(x, targets.data_ptr<int64_t>(), rows, V, loss.data_ptr<float>(),
                   lse.data_ptr<float>());
    });
  }
  return {loss, lse};
}

torch::Tensor fused_cross_entropy_grad(const torch::Tensor& logits, const torch::Tensor& targets,
                                       const torch::Tensor& lse, const torch::Tensor& grad_in) {
  check_rows(logits, targets);
  require_kernels(logits, "fused cross-entropy");
  const int64_t rows = logits.size(0), V = logits.size(1);
  // The upstream gradient of a mean comes expanded (stride 0): one value a row, made real.
  const torch::Tensor grad = grad_in.to(torch::kFloat32).contiguous();
  WIT_CHECK(grad.dim() == 1 && grad.size(0) == rows && lse.is_contiguous() &&
                lse.scalar_type() == torch::kFloat32 && lse.numel() == rows &&
                grad.device() == logits.device() && lse.device() == logits.device(),
            "fused cross-entropy: {} rows need {} fp32 gradients and log-sum-exps on the logits' "
            "device",
            rows, rows);
  torch::Tensor out = kernel_output(logits.sizes(), logits.options());
  const KernelScope scope("wit::kernel::cross_entropy_backward", {logits, targets, lse, grad},
                          {out});
  if (logits.is_cuda()) {
#ifdef WIT_MODEL_CUDA_KERNELS
    const c10::cuda::CUDAGuard on_device(logits.device());
    check_launch(
        ce::backward_cuda(logits.data_ptr(), logit_type(logits), targets.data_ptr<int64_t>(),
                          lse.data_ptr<float>(), grad.data_ptr<float>(), rows, V, out.data_ptr(),
                          at::cuda::getCurrentCUDAStream().stream()),
        "backward");
#endif
  } else {
    with_kernel_data(logits, [&](const auto* x) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
      backward_host(x, targets.data_ptr<int64_t>(), lse.data_ptr<float>(), grad.data_ptr<float>(),
                    rows, V, reinterpret_cast<T*>(out.data_ptr()));
    });
  }
  return out;
}

Loss fused_cross_entropy_mean(const torch::Tensor& logits, const torch::Tensor& targets) {
  const torch::Tensor rows = logits.reshape({-1, logits.size(-1)}).contiguous();
  const torch::Tensor token_loss =
      FusedCrossEntropy::apply(rows, targets.reshape({-1}).contiguous());
  // As cross_entropy_mean: the mean's gradient is 1/n at every token.
  const int64_t n = token_loss.numel();
  auto objective = token_loss.sum() * (1.0 / double(n));
  return {objective, token_loss.detach()};
}

Loss training_loss(const GPTConfig& cfg, const torch::Tensor& logits,
                   const torch::Tensor& targets) {
  if (cfg.cross_entropy == "fused") return fused_cross_entropy_mean(logits, targets);
  WIT_CHECK(cfg.cross_entropy == "ops", "model.cross_entropy = {}", cfg.cross_entropy);
  return cross_entropy_mean(logits, targets);
}

}  // namespace wit::model
