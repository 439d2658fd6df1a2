#include "trainer/runtime.h"

#include <dlfcn.h>
#include <malloc.h>
#include <torch/torch.h>

namespace wit {

void set_compute_threads(int threads) {
  using SetThreads = void (*)(int);
  auto openblas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (openblas) {
    // Matmuls dominate the step: they get the threads. libtorch's own OpenMP pool stays at one
    // thread, since two pools spinning on the same cores halve the throughput.
    openblas(threads);
    torch::set_num_threads(1);
  } else {
    torch::set_num_threads(threads);
  }
}

void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);  // never give the heap back
  mallopt(M_TOP_PAD, 64 << 20);
}

}  // namespace wit
