// What the tests of wit's fused-kernel keys (model.cross_entropy, model.layer_norm,
// optim.kernels) share: a run config from --set lines alone, and the rule that a key is committed
// when fused and left out when ops.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace wit
