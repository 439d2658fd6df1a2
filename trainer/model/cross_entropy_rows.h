// The fused cross-entropy's arithmetic, one definition for its CUDA kernels (cross_entropy.cu)
// and for the CPU (cross_entropy.cpp). No torch: nvcc compiles it without torch's headers.
//
// A row of V logits is read by kRowLanes lanes, lane t taking columns t, t + kRowLanes, ... in
// order and keeping a running (max, sum of exp(x - max)). The lanes' pairs then combine in a
// fixed tree: lane t with lane t + s for s = kRowLanes/2, ..., 2, 1. The row's log-sum-exp is
// max + log(sum), and its loss lse - x[target]. The gradient with respect to x[j] is
// (exp(x[j] - lse) - [j = target]) * g, for the row's upstream gradient g.
// A CUDA block is one row, its threads the lanes; the CPU runs the same lanes in a loop. So the
// order of every operation is the same on both, and they differ only where the device's expf
// and logf round differently from the CPU's.
#pragma once

#include <cmath>
#include <cstdint>

#include "trainer/model/kernel_arith.h"

namespace wit::model::ce {

constexpr int kRowLanes = 256;

using kernel::load;
using kernel::store;

// A running max and the sum of exp(x - max) over the values seen (none: max = -inf, sum = 0).
struct MaxSum {
  float max;
  float sum;
};

WIT_KERNEL_HD MaxSum empty() { return {-INFINITY, 0.0f}; }

WIT_KERNEL_HD void push(MaxSum& a, float x) {
  if (x == -INFINITY) return;  // exp(-inf) adds nothing
  if (x > a.max) {
    a.sum = a.sum * expf(a.max - x) + 1.0f;  // a.max = -inf: 0 * 0 + 1
    a.max = x;
  } else {
    a.sum += expf(x - a.max);  // a NaN x lands here and makes the sum NaN
  }
}

WIT_KERNEL_HD MaxSum combine(const MaxSum& a, const MaxSum& b) {
  const float m = a.max > b.max ? a.max : b.max;
  if (m == -INFINITY) return empty();
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

// Lane `lane`'s pair over its columns of one row.
template <class T>
WIT_KERNEL_HD MaxSum lane_partial(const T* row, int64_t V, int lane) {
  MaxSum a = empty();
  for (int64_t j = lane; j < V; j += kRowLanes) push(a, load(row, j));
  return a;
}

// One level of the lanes' tree: lane t (t < s) takes in lane t + s.
WIT_KERNEL_HD void tree_level(MaxSum* lanes, int t, int s) {
  lanes[t] = combine(lanes[t], lanes[t + s]);
}

// A target outside [0, V) has no loss: NaN, loud (ATen's NLL stops the device on one, or skips
// -100 as its ignore index; wit's targets are token ids, never -100).
WIT_KERNEL_HD bool valid_target(int64_t target, int64_t V) { return target >= 0 && target < V; }

// The row's loss and log-sum-exp from its lanes' combined pair.
template <class T>
WIT_KERNEL_HD void row_result(const MaxSum& all, const T* row, int64_t V, int64_t target,
                              float* loss, float* lse) {
  const float l = all.max + logf(all.sum);
  *lse = l;
  *loss = valid_target(target, V) ? l - load(row, target) : NAN;
}

// The row's upstream gradient, NaN for a row with no valid target (its loss is NaN too).
WIT_KERNEL_HD float row_grad(int64_t target, int64_t V, float g) {
  return valid_target(target, V) ? g : NAN;
}

// d loss / d x[j] times the row's upstream gradient g (row_grad's).
WIT_KERNEL_HD float grad_at(float x, float lse, bool is_target, float g) {
  return (expf(x - lse) - (is_target ? 1.0f : 0.0f)) * g;
}

}  // namespace wit::model::ce
