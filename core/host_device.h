// WIT_KERNEL_HD: a function that is both host and device code under nvcc, and plain inline C++
// elsewhere. wit's own kernels keep their arithmetic in headers marked with it, so the CPU form
// a test runs and the CUDA kernel are one definition.
#pragma once

#ifdef __CUDACC__
#define WIT_KERNEL_HD __host__ __device__ __forceinline__
#else
#define WIT_KERNEL_HD inline
#endif
