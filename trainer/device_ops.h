// The step's fixed-order arithmetic on tensors of any device: the gradient norm's chunk
// partials, clipping, the AdamW update and the weight sketch. On the CPU each calls the plain
// loop that defines it (trainer/optim/adamw.h, record/sketch.h): the same bits as always.
// On a GPU the same definitions run as torch operations on the device, with no floating-point
// atomics (every reduction is over a fixed shape), so a GPU run gives the same bits every time
// on the same GPU and libraries; only 8 bytes per norm chunk and 16 bytes of sketch come back to
// the host, each in one copy per call (a copy to the host is a wait for the device). The sketch
// is integers mod 2^32, exact in any order: on a GPU it is one kernel (trainer/sketch_kernel.h).
// The *_by_ops forms are the device implementations, callable on CPU tensors, so tests check
// them against the definitions on any machine. With optim.kernels = fused (`fused` below) a GPU
// runs the norm's partials and the AdamW update as one kernel each instead
// (trainer/optim/adamw_kernels.h), whose arithmetic is the CPU loops' own: the same bits as the
// CPU. The *_fused forms take CPU tensors too: there they run the loops, counted as one kernel.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "trainer/optim/adamw.h"
#include "record/sketch.h"

namespace wit {

// Sum of squares of g[0, n) per kNormChunk chunk (chunk c covers [c·C, (c+1)·C)).
std::vector<double> grad_norm_partials(const torch::Tensor& g, int64_t n, bool fused);
std::vector<double> grad_norm_partials_by_ops(const torch::Tensor& g, int64_t n);
std::vector<double> grad_norm_partials_fused(const torch::Tensor& g, int64_t n);

// Scales g[0, n) by the clip factor of `norm` (optim::clip_grads); returns the factor.
float clip_grads(torch::Tensor& g, int64_t n, double norm, float clip);

// optim::adamw_update on the first n elements of p, g, m and v.
void adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                  int64_t n, const std::vector<optim::DecaySegment>& segments, int64_t t,
                  const optim::Hyper& h, bool fused);
void adamw_update_by_ops(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                         torch::Tensor& v, int64_t n,
                         const std::vector<optim::DecaySegment>& segments, int64_t t,
                         const optim::Hyper& h);
void adamw_update_fused(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                        torch::Tensor& v, int64_t n,
                        const std::vector<optim::DecaySegment>& segments, int64_t t,
                        const optim::Hyper& h);
// Whether this build has those kernels for CUDA (the CUDA path: nvcc and NCCL at configure time).
bool fused_optimizer_built();

// The sketch of `values` (fp32, 1-D), parameters [first_index, first_index + numel) of the flat
// vector, the same integers on every device (exact): witness::sketch_weights on the CPU; on a
// GPU its kernel where this build has it, else the operations' form. A thread checks the kernel
// against the operations' form on its first sketch of 2,048 parameters or more on each device;
// a disagreement or a failed launch (a fault of the kernel there) is reported on stderr and the
// operations' form used from then on.
witness::WeightSketch sketch_weights(const torch::Tensor& values, int64_t first_index);
witness::WeightSketch sketch_weights_by_ops(const torch::Tensor& values, int64_t first_index);
// The kernel (trainer/sketch_kernel.h): one read of the parameters. On CPU tensors the
// definition's loop, counted as one kernel like the fused optimizer's CPU forms.
witness::WeightSketch sketch_weights_fused(const torch::Tensor& values, int64_t first_index);
// Whether this build has the kernel for CUDA (the CUDA path, like fused_optimizer_built).
bool sketch_kernel_built();

}  // namespace wit
