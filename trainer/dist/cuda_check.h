// Checked CUDA and NCCL calls, and owners of their handles: a failed call throws wit::Error
// naming the call, its site and the library's own message; owners release once, never throw.
//
//   WIT_CUDA(cudaMemcpy(host, dev.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
//   DeviceArray<float> dev = device_alloc<float>(n);  // cudaMalloc'd, cudaFree'd
//   CudaStream stream = make_stream();
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <memory>

// ncclCommFinalize (clean, flushing shutdown) and ncclGetLastError are what this layer uses.
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "wit's NCCL backend needs NCCL 2.14 or newer"
#endif

namespace wit::dist {

// ---------------------------------------------------------------------------------------------
// Checked calls

[[noreturn]] void cuda_fail(cudaError_t rc, const char* call, const char* file, int line);
[[noreturn]] void nccl_fail(ncclResult_t rc, const char* call, const char* file, int line);

inline void cuda_check(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc != cudaSuccess) cuda_fail(rc, call, file, line);
}
inline void nccl_check(ncclResult_t rc, const char* call, const char* file, int line) {
  if (rc != ncclSuccess) nccl_fail(rc, call, file, line);
}

#define WIT_CUDA(call) ::wit::dist::cuda_check((call), #call, __FILE__, __LINE__)
#define WIT_NCCL(call) ::wit::dist::nccl_check((call), #call, __FILE__, __LINE__)

// ---------------------------------------------------------------------------------------------
// Device memory: plain cudaMalloc, never managed memory (whose pages migrate on demand, so where
// data lives and what a collective costs would depend on access patterns).

struct CudaFree {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
template <typename T>
using DeviceArray = std::unique_ptr<T[], CudaFree>;

// n elements of T on the current device, uninitialised.
template <typename T>
DeviceArray<T> device_alloc(size_t n) {
  void* p = nullptr;
  WIT_CUDA(cudaMalloc(&p, n * sizeof(T)));
  return DeviceArray<T>(static_cast<T*>(p));
}

// ---------------------------------------------------------------------------------------------
// Streams

struct CudaStreamDestroy {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
using CudaStream = std::unique_ptr<CUstream_st, CudaStreamDestroy>;

// A stream on the current device that does not synchronise implicitly with the legacy default
// stream: ordering against other work is the owner's to state.
CudaStream make_stream();

// Makes `device` current for a scope and restores the caller's device afterwards.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device);
  ~CurrentDevice();
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int device_ = 0, previous_ = 0;
};

// ---------------------------------------------------------------------------------------------
// NCCL communicator

// Owns an ncclComm_t. A healthy communicator is finalised (flushing its operations) and
// destroyed; one marked failed, or released while an exception unwinds, is aborted instead,
// since a finalise could wait forever on peers that are gone.
class NcclComm {
 public:
  NcclComm() = default;
  // Collective over `nranks` processes: every rank calls it with the same id.
  NcclComm(int nranks, const ncclUniqueId& id, int rank);
  ~NcclComm();
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  // After a failed call on this communicator: it will be aborted, not finalised.
  void mark_failed() { failed_ = true; }
  // Aborts now (operations still running on the device included) and releases the handle.
  void abort() noexcept;

 private:
  void release() noexcept;

  ncclComm_t comm_ = nullptr;
  bool failed_ = false;
  int unwinding_at_start_ = 0;  // std::uncaught_exceptions() when created
};

}  // namespace wit::dist
