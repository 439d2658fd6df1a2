// Process-wide settings the step's speed and numerics depend on: how many threads the CPU
// kernels use (libtorch's and the BLAS's own pool), and keeping freed memory for reuse.
#pragma once

namespace wit {

// Sets libtorch's intra-op threads and, when the BLAS is OpenBLAS, its own thread pool, which
// libtorch does not control: left alone it starts one spinning thread per core.
void set_compute_threads(int threads);

// Big activations are allocated and freed every micro-batch; by default glibc returns them to
// the kernel each time and the next step pays page faults to zero them again. Keep them.
void keep_freed_memory();

}  // namespace wit
