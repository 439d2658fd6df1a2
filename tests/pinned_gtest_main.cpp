// The main() of the test binaries that train: CPU numerics pinned as in wit itself
// (trainer/cpu_numerics.h), so what a test trains in-process replays under `wit verify`.
#include <gtest/gtest.h>

#include "trainer/cpu_numerics.h"

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
