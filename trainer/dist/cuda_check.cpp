// Checked CUDA and NCCL calls and the owners of their handles (see cuda_check.h).
#include "trainer/dist/cuda_check.h"

#include <exception>
#include <string>
#include <utility>

#include "core/error.h"

namespace wit::dist {

void cuda_fail(cudaError_t rc, const char* call, const char* file, int line) {
  fail("CUDA: {} failed at {}:{}: {} ({})", call, file, line, cudaGetErrorString(rc),
       cudaGetErrorName(rc));
}

void nccl_fail(ncclResult_t rc, const char* call, const char* file, int line) {
  // The error string names the class of failure; NCCL's last error message (process-wide, so
  // usually but not surely this call's) says what went wrong.
  const char* last = ncclGetLastError(nullptr);
  const std::string detail = last && *last ? std::string(" (last NCCL error: ") + last + ")" : "";
  fail("NCCL: {} failed at {}:{}: {}{}", call, file, line, ncclGetErrorString(rc), detail);
}

CudaStream make_stream() {
  cudaStream_t s = nullptr;
  WIT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return CudaStream(s);
}

CurrentDevice::CurrentDevice(int device) : device_(device) {
  WIT_CUDA(cudaGetDevice(&previous_));
  if (previous_ != device_) WIT_CUDA(cudaSetDevice(device_));
}

CurrentDevice::~CurrentDevice() {
  if (previous_ != device_) cudaSetDevice(previous_);
}

NcclComm::NcclComm(int nranks, const ncclUniqueId& id, int rank)
    : unwinding_at_start_(std::uncaught_exceptions()) {
  WIT_NCCL(ncclCommInitRank(&comm_, nranks, id, rank));
}

NcclComm::~NcclComm() { release(); }

NcclComm::NcclComm(NcclComm&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)),
      failed_(other.failed_),
      unwinding_at_start_(other.unwinding_at_start_) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, nullptr);
    failed_ = other.failed_;
    unwinding_at_start_ = other.unwinding_at_start_;
  }
  return *this;
}

void NcclComm::abort() noexcept {
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclComm::release() noexcept {
  if (!comm_) return;
  if (failed_ || std::uncaught_exceptions() > unwinding_at_start_) return abort();
  // Blocking mode: the finalise returns once this rank's operations have completed.
  if (ncclCommFinalize(comm_) != ncclSuccess) return abort();
  ncclCommDestroy(comm_);
  comm_ = nullptr;
}

}  // namespace wit::dist
