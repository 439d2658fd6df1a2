// The benchmarks' dataset: `data` if it is a prepared dataset, else the built-in corpus prepared
// once into the system temp dir (reused by later runs); and a run to time steps of.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "record/run_config.h"
#include "trainer/compute.h"
#include "trainer/data/dataset.h"
#include "trainer/data/prepare.h"
#include "trainer/layout.h"
#include "trainer/run_plan.h"

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

// A config (with KEY=VALUE overrides) on a prepared dataset, planned, on the device it names
// (train.device, resolved as `wit train` resolves it), and one process's ddp layout initialised
// from seed 1: what `wit train` steps, without the witness.
struct BenchRun {
  config::Config cfg;
  Compute compute;
  RunConfig rc;
  data::Dataset ds;
  RunPlan plan{rc, ds};  // holds references to the two above
  std::unique_ptr<dist::Communicator> comm = dist::make_single_process();
  std::unique_ptr<Layout> layout =
      make_layout("ddp", rc.model, rc.train.micro_batches, *comm, compute);

  BenchRun(const std::filesystem::path& config, std::vector<std::string> sets,
           const std::filesystem::path& data_dir)
      : cfg(load(config, sets, data_dir)),
        compute(resolve_compute(cfg, 1, /*quiet=*/true)),  // writes model.attention back
        rc(run_config_from(cfg)),
        ds(data::Dataset::open(rc.data.dir)) {
    layout->init(1);
  }

 private:
  static config::Config load(const std::filesystem::path& config, std::vector<std::string> sets,
                             const std::filesystem::path& data_dir) {
    sets.push_back("data.dir=" + data_dir.string());
    return config::Config::load(config, run_schema(), sets);
  }
};

}  // namespace wit::bench
