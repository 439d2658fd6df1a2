// The benchmarks' dataset: `data` if it is a prepared dataset, else the built-in corpus prepared
// once into the system temp dir (reused by later runs).
#pragma once

#include <filesystem>

#include "trainer/data/prepare.h"

namespace wit::bench {

inline std::filesystem::path prepared_dataset(std::filesystem::path data) {
  if (std::filesystem::exists(data / "manifest.h5")) return data;
  data = std::filesystem::temp_directory_path() / "wit-bench-kjv";
  if (!std::filesystem::exists(data / "manifest.h5")) {
    wit::data::PrepareOptions o;
    o.out = data;
    o.force = true;
    wit::data::prepare(o);
  }
  return data;
}

}  // namespace wit::bench
