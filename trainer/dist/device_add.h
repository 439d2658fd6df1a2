// The one piece of device arithmetic in the NCCL backend: a[i] = a[i] + b[i] in fp32, the same
// IEEE operation the MPI backend does on the CPU (compiled with no contraction, no flush-to-zero).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace wit::dist {

// a, b: n floats in device memory on the stream's device. Enqueues the add on `stream` and
// returns the launch status (checked by the caller); the add completes with the stream.
cudaError_t device_add(float* a, const float* b, int64_t n, cudaStream_t stream);

}  // namespace wit::dist
