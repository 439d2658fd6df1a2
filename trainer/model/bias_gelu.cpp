#include "trainer/model/bias_gelu.h"

#include <limits>
#include <type_traits>

#include "core/error.h"
#include "trainer/model/bias_gelu_rows.h"
#include "trainer/model/kernels.h"

#ifdef WIT_MODEL_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "trainer/model/bias_gelu_kernels.h"
#endif

namespace wit::model {

namespace {

constexpr const char* kGeluWhat = "fused bias and GELU";

void check_gelu_rows(const torch::Tensor& h, const torch::Tensor& b) {
  const auto t = h.scalar_type();
  WIT_CHECK(h.dim() == 2 && h.is_contiguous() && (t == torch::kFloat32 || t == torch::kBFloat16) &&
                h.size(1) > 0,
            "fused bias and GELU: the rows must be a contiguous (rows, C) fp32 or bf16 tensor, "
            "not {} {}",
            c10::toString(t), c10::str(h.sizes()));
  // The kernels' grid: a block per chunk of rows, and up to 65,535 blocks of 256 columns.
  WIT_CHECK(h.size(0) / gelu::kChunkRows < std::numeric_limits<int32_t>::max() &&
                h.size(1) <= int64_t(65535) * 256,
            "fused bias and GELU: {} rows of {}, over a kernel grid", h.size(0), h.size(1));
  WIT_CHECK(b.dim() == 1 && b.size(0) == h.size(1) && b.is_contiguous() &&
                b.scalar_type() == torch::kFloat32 && b.device() == h.device(),
            "fused bias and GELU: the bias must be {} contiguous fp32 values on the rows' device",
            h.size(1));
  require_kernels(h, kGeluWhat);
}

#ifdef WIT_MODEL_CUDA_KERNELS
void check_gelu_launch(const char* error, const char* what) {
  if (error) fail("fused bias and GELU: the {} kernels did not launch: {}", what, error);
}
#endif

torch::Tensor forward_rows(const torch::Tensor& h, const torch::Tensor& b) {
  check_gelu_rows(h, b);
  const int64_t rows = h.size(0), C = h.size(1);
  torch::Tensor y = kernel_output({rows, C}, h.options());
  const KernelScope scope("wit::kernel::bias_gelu_forward", {h, b}, {y});
  if (h.is_cuda()) {
#ifdef WIT_MODEL_CUDA_KERNELS
    const c10::cuda::CUDAGuard on_device(h.device());
    check_gelu_launch(
        gelu::forward_cuda(h.data_ptr(), h.scalar_type() == torch::kBFloat16, b.data_ptr<float>(),
                           rows, C, y.data_ptr(), at::cuda::getCurrentCUDAStream().stream()),
        "forward");
#endif
  } else {
    with_kernel_data(y, [&](auto* out) {
      const auto* in = reinterpret_cast<const std::remove_pointer_t<decltype(out)>*>(h.data_ptr());
      for (int64_t k = 0; k < gelu::chunks(rows); ++k)
        for (int64_t j = 0; j < C; ++j)
          gelu::chunk_forward(in, b.data_ptr<float>(), rows, C, k, j, out);
    });
  }
  return y;
}

BiasGeluGrads backward_rows(const torch::Tensor& dy, const torch::Tensor& h,
                            const torch::Tensor& b) {
  check_gelu_rows(h, b);
  WIT_CHECK(dy.sizes() == h.sizes() && dy.is_contiguous() && dy.scalar_type() == h.scalar_type() &&
                dy.device() == h.device(),
            "fused bias and GELU: the upstream gradient must be a contiguous {} {} tensor on the "
            "rows' device",
            c10::toString(h.scalar_type()), c10::str(h.sizes()));
  const int64_t rows = h.size(0), C = h.size(1), n = gelu::chunks(rows);
  BiasGeluGrads g{kernel_output({rows, C}, h.options()),
                  kernel_output({C}, h.options().dtype(torch::kFloat32))};
  torch::Tensor partials = kernel_output({n, C}, h.options().dtype(torch::kFloat32));
  const KernelScope scope("wit::kernel::bias_gelu_backward", {dy, h, b}, {g.dh, g.dbias});
  if (h.is_cuda()) {
#ifdef WIT_MODEL_CUDA_KERNELS
    const c10::cuda::CUDAGuard on_device(h.device());
    check_gelu_launch(gelu::backward_cuda(
                          dy.data_ptr(), h.data_ptr(), h.scalar_type() == torch::kBFloat16,
                          b.data_ptr<float>(), rows, C, g.dh.data_ptr(), partials.data_ptr<float>(),
                          g.dbias.data_ptr<float>(), at::cuda::getCurrentCUDAStream().stream()),
                      "backward");
#endif
  } else {
    with_kernel_data(g.dh, [&](auto* dh) {
      using T = std::remove_pointer_t<decltype(dh)>;
      const auto* d = reinterpret_cast<const T*>(dy.data_ptr());
      const auto* in = reinterpret_cast<const T*>(h.data_ptr());
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < C; ++j)
          gelu::chunk_backward(d, in, b.data_ptr<float>(), rows, C, k, j, dh,
                               partials.data_ptr<float>());
    });
    for (int64_t j = 0; j < C; ++j)
      gelu::chunks_total(partials.data_ptr<float>(), n, C, j, g.dbias.data_ptr<float>());
  }
  return g;
}

struct FusedBiasGelu : torch::autograd::Function<FusedBiasGelu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& b) {
    ctx->save_for_backward({h, b});
    return forward_rows(h, b);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto g = backward_rows(grads[0].contiguous(), saved[0], saved[1]);
    return {g.dh, g.dbias};
  }
};

}  // namespace

torch::Tensor fused_bias_gelu_rows(const torch::Tensor& h, const torch::Tensor& b) {
  return forward_rows(h, b);
}

BiasGeluGrads fused_bias_gelu_grads(const torch::Tensor& dy, const torch::Tensor& h,
                                    const torch::Tensor& b) {
  return backward_rows(dy, h, b);
}

torch::Tensor fused_bias_gelu(const torch::Tensor& h, const torch::Tensor& b) {
  const int64_t C = h.size(-1);
  auto sizes = h.sizes().vec();
  return FusedBiasGelu::apply(h.reshape({-1, C}).contiguous(), b.contiguous()).view(sizes);
}

torch::Tensor linear_gelu(const GPTConfig& cfg, const torch::Tensor& x, const torch::Tensor& w,
                          const torch::Tensor& b) {
  if (cfg.gelu == "fused") return fused_bias_gelu(torch::linear(x, w), b);
  WIT_CHECK(cfg.gelu == "ops", "model.gelu = {}", cfg.gelu);
  return torch::gelu(torch::linear(x, w, b), "tanh");
}

}  // namespace wit::model
