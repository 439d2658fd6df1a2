// Process-wide settings the step's speed and numerics depend on: how many threads the CPU
// kernels use (libtorch's and the BLAS's own pool), and keeping freed memory for reuse.
#pragma once

namespace wit {

// Gives the step's CPU kernels `threads` threads. With OpenBLAS (which libtorch does not
// control: left alone it starts a spinning thread per core), the threads go to the BLAS and
// libtorch's pool keeps one; with another BLAS, to libtorch.
void set_compute_threads(int threads);

// Big activations are allocated and freed every micro-batch; by default glibc returns them to
// the kernel each time and the next step pays page faults to zero them again. Keep them.
void keep_freed_memory();

}  // namespace wit
