#include "verify/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/sha256.h"

namespace wit::witness {

void compare_inputs(const StepFields& got, const StepFields& logged) {
  const uint64_t s = logged.step;
  auto f32 = [&](const char* name, float a, float b) {
    if (std::memcmp(&a, &b, 4) != 0)
      mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}", s, name, bits(a),
                           bits(b)));
  };
  auto dig = [&](const char* name, const auto& a, const auto& b) {
    if (a != b)
      mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}", s, name,
                           to_hex(a.data(), a.size()).substr(0, 16),
                           to_hex(b.data(), b.size()).substr(0, 16)));
  };
  if (got.tokens != logged.tokens)
    mismatch(fmt::format("step {}, field tokens: {} vs {}", s, got.tokens, logged.tokens));
  f32("lr", got.lr, logged.lr);
  f32("weight_decay", got.weight_decay, logged.weight_decay);
  f32("beta1", got.beta1, logged.beta1);
  f32("beta2", got.beta2, logged.beta2);
  f32("eps", got.eps, logged.eps);
  f32("grad_clip", got.grad_clip, logged.grad_clip);
  dig("batch_hash", got.batch_hash, logged.batch_hash);
  dig("rng_commitment", got.rng_commitment, logged.rng_commitment);
}

void mismatch(std::string what, bool outputs) {
  throw Mismatch{std::move(what), outputs};
}

std::string bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return fmt::format("{} (0x{:08x})", v, u);
}

double relative(double got, double logged) {
  return std::abs(got - logged) / std::max(std::abs(logged), 1e-12);
}

double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}

void compare_step(const StepFields& got, const StepFields& logged,
                  const std::optional<double>& tolerance, Distances& seen) {
  compare_inputs(got, logged);
  const uint64_t s = logged.step;
  auto num = [&](const char* name, float a, float b, double* worst) {
    if (tolerance) {
      const double d = relative(a, b);
      if (worst) *worst = worse(*worst, d);
      if (!(d <= *tolerance))
        mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}: relative "
                             "distance {:.3g} exceeds the tolerance {:.3g}",
                             s, name, a, b, d, *tolerance),
                 true);
      return;
    }
    if (std::memcmp(&a, &b, 4) != 0)
      mismatch(fmt::format("step {}, field {}: replay gives {}, the log says {}", s, name, bits(a),
                           bits(b)),
               true);
  };
  num("loss", got.loss, logged.loss, &seen.loss);
  num("grad_norm", got.grad_norm, logged.grad_norm, &seen.grad_norm);
  num("clip_factor", got.clip_factor, logged.clip_factor, nullptr);
  if (!tolerance && got.weight_fingerprint != logged.weight_fingerprint)
    mismatch(fmt::format("step {}, field weight_fingerprint: replay gives {}, the log says {}", s,
                         to_hex(got.weight_fingerprint.data(), 16),
                         to_hex(logged.weight_fingerprint.data(), 16)),
             true);
}

std::string value_problem(const std::string& what, float got, float logged,
                          const std::optional<double>& tolerance, double& worst) {
  if (tolerance) {
    const double d = relative(got, logged);
    worst = worse(worst, d);
    if (d <= *tolerance) return "";
    return fmt::format("{}: recomputed {}, the log says {}: relative distance {:.3g} exceeds the "
                       "tolerance {:.3g}",
                       what, got, logged, d, *tolerance);
  }
  if (std::memcmp(&got, &logged, 4) == 0) return "";
  return fmt::format("{}: recomputed {}, the log says {}", what, bits(got), bits(logged));
}

void agree_with_root(dist::Communicator& comm, std::string problem, bool outputs) {
  uint64_t n = problem.size();
  comm.broadcast(&n, sizeof n, 0);
  problem.resize(n);
  if (n) comm.broadcast(problem.data(), n, 0);
  if (n) mismatch(problem, outputs);
}

}  // namespace wit::witness
