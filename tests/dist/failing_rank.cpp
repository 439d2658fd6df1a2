// `wit train` with a fault: rank RANK throws before step STEP, through the training loop's
// before-step hook, to check that one failing rank brings the whole job down
// (tests/dist/rank_failure.sh) instead of leaving the others waiting in a collective.
// Usage: wit_test_failing_rank RANK STEP CONFIG RUN_DIR [KEY=VALUE ...]
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "trainer/cpu_numerics.h"
#include "trainer/train_loop.h"

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);
  if (argc < 5) {
    fmt::print(stderr, "usage: {} RANK STEP CONFIG RUN_DIR [KEY=VALUE ...]\n", argv[0]);
    return 2;
  }
  const int fault_rank = std::atoi(argv[1]);
  const int64_t fault_step = std::atoll(argv[2]);
  wit::TrainOptions opts;
  opts.config = argv[3];
  opts.run_dir = argv[4];
  opts.quiet = true;
  for (int i = 5; i < argc; ++i) opts.overrides.push_back(argv[i]);
  wit::TrainHooks hooks;
  hooks.before_step = [&](int rank, int64_t step) {
    if (rank == fault_rank && step == fault_step)
      wit::fail("fault injected on rank {} at step {}", rank, step);
  };
  try {
    wit::train(opts, hooks);
  } catch (const wit::SharedError& e) {
    if (e.report()) fmt::print(stderr, "wit: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
