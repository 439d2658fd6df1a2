// What the tests of wit's fused-kernel keys (model.cross_entropy, model.layer_norm, model.gelu,
// optim.kernels) share: a run config from --set lines alone, the rule that a key is committed
// when fused and left out when ops, inputs whose bits every CPU makes alike and a hash of
// outputs' bits (to pin an arithmetic's version), and bf16 autocast on the CPU.
#pragma once

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "record/run_config.h"

namespace wit {

inline config::Config config_with(const std::vector<std::string>& sets) {
  return config::Config::parse("{}", "test", run_schema(), sets);
}

// `key` = fused is part of the trajectory: committed, and read back the same; ops is what a
// committed config without the key means (every run before the key trained so).
inline void expect_committed_only_when_fused(const std::string& key) {
  const std::string fused = committed_yaml(config_with({key + "=fused"}));
  const std::string leaf = key.substr(key.find('.') + 1);
  EXPECT_NE(fused.find(leaf + ": \"fused\""), std::string::npos) << fused;
  EXPECT_EQ(committed_yaml(parse_committed(fused, "test")), fused);
  EXPECT_EQ(committed_yaml(config_with({key + "=ops"})), committed_yaml(config_with({})));
}

// Integers to floats: inputs whose bits every CPU makes the same (randn's need not be).
inline torch::Tensor pattern(int64_t n, uint32_t seed, float scale, float offset) {
  auto t = torch::empty({n});
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    t[i] = float(int32_t(s >> 8) - (1 << 23)) / float(1 << 23) * scale + offset;
  }
  return t;
}

inline uint64_t fnv1a(const torch::Tensor& t, uint64_t h) {
  const auto c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  for (size_t i = 0; i < size_t(c.nbytes()); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// Largest |a - b|, NaN where either has one the other does not; largest |a|.
inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}
inline double max_abs(const torch::Tensor& a) { return a.abs().max().item<double>(); }

// bf16 autocast on the CPU, standing in for a GPU step's on CUDA.
class CpuAutocast {
 public:
  CpuAutocast() {
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  }
  ~CpuAutocast() {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
};

}  // namespace wit
