// The optimizer's committed hyperparameters: AdamW's constants and the learning-rate schedule a
// run's config names (record/run_config.h). No torch; trainer/optim/adamw.h applies them.
#pragma once

#include <cstdint>
#include <string>

namespace wit::optim {

// The learning rate after warmup: cosine or linear decay to min_lr over every remaining step, or
// warmup-stable-decay (lr held, then a linear decay to min_lr over the last decay_fraction of
// the steps after warmup).
enum class Schedule { Cosine, Linear, Wsd };

struct AdamWConfig {
  double lr = 6e-4;
  double min_lr = 6e-5;
  int64_t warmup_steps = 0;
  Schedule schedule = Schedule::Cosine;
  double decay_fraction = 0.2;  // wsd only
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  // 0 disables clipping
  // How a GPU computes the norm and the update: "ops", or "fused" (trainer/device_ops.h).
  std::string kernels = "ops";
};

}  // namespace wit::optim
