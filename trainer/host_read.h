// A copy of a tensor to the host where the step reads its values: on a GPU the host waits for
// the device there. Each such read is named "wit::to_host" in libtorch's profiler (a user scope),
// so a trace shows where a step waits and wit_bench_step_ops counts them on any build.
#pragma once

#include <ATen/record_function.h>
#include <torch/torch.h>

namespace wit {

inline torch::Tensor to_host(const torch::Tensor& t) {
  RECORD_USER_SCOPE("wit::to_host");
  return t.to(torch::kCPU).contiguous();
}

}  // namespace wit
