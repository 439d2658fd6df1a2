#include "trainer/optim/adamw.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace wit::optim {

namespace {

// b^t by repeated squaring: a fixed sequence of IEEE multiplications, the same on every libm.
double power(double b, int64_t t) {
  double r = 1.0;
  while (t > 0) {
    if (t & 1) r *= b;
    b *= b;
    t >>= 1;
  }
  return r;
}

}  // namespace

Hyper hyper_at(const AdamWConfig& c, int64_t step, int64_t total_steps) {
  double lr;
  if (step < c.warmup_steps) {
    lr = c.lr * double(step + 1) / double(c.warmup_steps);
  } else if (c.schedule == Schedule::Wsd) {
    // The decay's steps end at the last step; before them the rate holds at lr.
    const int64_t after_warmup = std::max<int64_t>(1, total_steps - c.warmup_steps);
    const int64_t decay_len = std::max<int64_t>(
        1, std::min<int64_t>(after_warmup, int64_t(std::ceil(c.decay_fraction * double(after_warmup)))));
    const int64_t first_decay = total_steps - decay_len;
    const double progress =
        step < first_decay ? 0.0 : std::min(1.0, double(step - first_decay + 1) / double(decay_len));
    lr = c.lr - (c.lr - c.min_lr) * progress;
  } else {
    const int64_t decay_steps = std::max<int64_t>(1, total_steps - 1 - c.warmup_steps);
    const double progress = std::min(1.0, double(step - c.warmup_steps) / double(decay_steps));
    lr = c.schedule == Schedule::Linear
             ? c.lr - (c.lr - c.min_lr) * progress
             : c.min_lr + 0.5 * (c.lr - c.min_lr) * (1.0 + std::cos(M_PI * progress));
  }
  return {float(lr),      float(c.weight_decay), float(c.beta1),
          float(c.beta2), float(c.eps),          float(c.grad_clip)};
}

double grad_norm(const float* g, int64_t n) { return norm_from_partials(grad_norm_partials(g, n)); }

double norm_from_partials(const std::vector<double>& partials) {
  double total = 0.0;
  for (double s : partials) total += s;
  return std::sqrt(total);
}

std::vector<double> grad_norm_partials(const float* g, int64_t n) {
  const int64_t chunks = (n + kNormChunk - 1) / kNormChunk;
  std::vector<double> partial(chunks, 0.0);
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      partial[c] = sum_of_squares(g, c * kNormChunk, std::min(n, (c + 1) * kNormChunk));
  });
  return partial;
}

float clip_grads(float* g, int64_t n, double norm, float clip) {
  if (clip <= 0.0f || !(norm > double(clip))) return 1.0f;
  const float f = float(double(clip) / (norm + 1e-6));
  at::parallel_for(0, n, kNormChunk, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) g[i] *= f;
  });
  return f;
}

AdamWScalars adamw_scalars(const Hyper& h, int64_t t) {
  WIT_CHECK(t >= 1, "optimizer step must be 1-based, got {}", t);
  return {h.beta1,
          h.beta2,
          1.0f - h.beta1,
          1.0f - h.beta2,
          float(double(h.lr) / (1.0 - power(double(h.beta1), t))),
          float(std::sqrt(1.0 - power(double(h.beta2), t))),
          1.0f - h.lr * h.weight_decay,
          h.eps};
}

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n,
                  const std::vector<DecaySegment>& segments, int64_t t, const Hyper& h) {
  const AdamWScalars k = adamw_scalars(h, t);
  for (const auto& s : segments) {
    const int64_t sb = std::max<int64_t>(0, s.begin), se = std::min(n, s.end);
    if (sb >= se) continue;
    const float d = s.decay ? k.decay : 1.0f;
    at::parallel_for(sb, se, kNormChunk, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) adamw_element(p[i], g[i], m[i], v[i], d, k);
    });
  }
}

}  // namespace wit::optim
