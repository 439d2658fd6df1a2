// `wit train`: resolve the config, build the model and data, run steps with progress, periodic
// evaluation and checkpoints, and export the final model. Resume continues bit for bit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace wit {

struct TrainOptions {
  std::filesystem::path config;        // YAML of a new run (unused with resume)
  std::vector<std::string> overrides;  // "section.key=value"
  std::filesystem::path run_dir;       // empty: runs/<config name>
  bool resume = false;
  int64_t until = -1;  // stop after this many steps, checkpointed, as if interrupted
  bool quiet = false;  // no progress lines
  // Write each checkpoint before the next step, instead of from a snapshot in the background
  // (which holds a second copy of the state on rank 0's host while it writes).
  bool sync_checkpoints = false;
  // Private key that signs the witness log; empty: witness::default_key_path(), created on
  // first use.
  std::filesystem::path key;
};

struct TrainSummary {
  std::filesystem::path run_dir;
  int64_t steps_done = 0;
  float last_loss = 0;
  float val_loss = 0;
  std::filesystem::path checkpoint;
  std::filesystem::path model_file;  // empty unless the run finished
  std::filesystem::path witness_log;
  bool is_root = true;  // rank 0 of the job (prints the summary)
};

// What a caller adds to a run besides its options: code called at fixed points of the loop. The
// command line adds none; a test adds a fault one rank raises, to see the whole job come down.
struct TrainHooks {
  // On every rank, before step `step` (0-based) runs.
  std::function<void(int rank, int64_t step)> before_step;
};

TrainSummary train(const TrainOptions& opts, const TrainHooks& hooks = {});

}  // namespace wit
