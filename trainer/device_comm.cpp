#include "trainer/device_comm.h"

#include <fmt/format.h>

#include <numeric>

#include "core/error.h"

#ifdef WIT_TORCH_CUDA
#include <cuda_runtime.h>
#endif
#if defined(WIT_HAVE_NCCL) && defined(WIT_TORCH_CUDA)
#include "trainer/dist/nccl_communicator.h"
#endif

namespace wit {

std::unique_ptr<dist::Communicator> device_communicator(dist::Communicator& comm,
                                                        const Compute& compute, bool quiet) {
  if (!compute.is_cuda() || comm.size() == 1) return nullptr;
  const int gpus = int(torch::cuda::device_count());
#if defined(WIT_HAVE_NCCL) && defined(WIT_TORCH_CUDA)
  if (dist::local_size() <= gpus) return dist::make_nccl(comm);
#endif
  if (!quiet && comm.is_root())
    fmt::print("gradients between GPUs go through {} staged in host memory ({} ranks on {} GPU(s){})\n",
               comm.backend(), dist::local_size(), gpus,
#if defined(WIT_HAVE_NCCL)
               ": NCCL needs a GPU per rank"
#else
               ": this build has no NCCL backend"
#endif
    );
  return std::make_unique<HostStagedCommunicator>(comm, compute.device);
}

HostStagedCommunicator::HostStagedCommunicator(dist::Communicator& inner, torch::Device device,
                                               bool every_buffer)
    : inner_(inner), device_(device), every_buffer_(every_buffer) {}

bool HostStagedCommunicator::on_device(const void* p) const {
  if (every_buffer_) return true;
#ifdef WIT_TORCH_CUDA
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // a host pointer unknown to CUDA: clear the error it leaves
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
#else
  (void)p;
  return false;
#endif
}

torch::Tensor HostStagedCommunicator::bytes_at(const void* p, size_t bytes) const {
  return torch::from_blob(const_cast<void*>(p), {int64_t(bytes)},
                          torch::TensorOptions().dtype(torch::kUInt8).device(device_));
}

// A copy in host memory of the device bytes at p (a new buffer even when "device" is the CPU).
static torch::Tensor host_copy(const torch::Tensor& t) {
  return t.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

void HostStagedCommunicator::reduce_scatter_canonical_v(float* data,
                                                        const std::vector<int64_t>& counts) {
  if (!on_device(data)) return inner_.reduce_scatter_canonical_v(data, counts);
  const int64_t n = std::accumulate(counts.begin(), counts.end(), int64_t(0));
  auto dev = bytes_at(data, size_t(n) * sizeof(float));
  auto host = host_copy(dev);
  inner_.reduce_scatter_canonical_v(reinterpret_cast<float*>(host.data_ptr<uint8_t>()), counts);
  dev.copy_(host);
}

void HostStagedCommunicator::all_gather(float* data, int64_t n) {
  if (!on_device(data)) return inner_.all_gather(data, n);
  auto dev = bytes_at(data, size_t(n) * sizeof(float));
  auto host = host_copy(dev);
  inner_.all_gather(reinterpret_cast<float*>(host.data_ptr<uint8_t>()), n);
  dev.copy_(host);
}

void HostStagedCommunicator::all_gather_v(const float* mine, float* all,
                                          const std::vector<int64_t>& counts) {
  if (!on_device(all)) return inner_.all_gather_v(mine, all, counts);
  const int64_t n = std::accumulate(counts.begin(), counts.end(), int64_t(0));
  const int64_t m = counts.at(size_t(rank()));
  auto host_mine = host_copy(bytes_at(mine, size_t(m) * sizeof(float)));
  auto host_all = torch::empty({n * int64_t(sizeof(float))}, torch::kUInt8);
  inner_.all_gather_v(reinterpret_cast<const float*>(host_mine.data_ptr<uint8_t>()),
                      reinterpret_cast<float*>(host_all.data_ptr<uint8_t>()), counts);
  bytes_at(all, size_t(n) * sizeof(float)).copy_(host_all);
}

void HostStagedCommunicator::send(const void* data, size_t bytes, int to) {
  if (!on_device(data)) return inner_.send(data, bytes, to);
  auto host = host_copy(bytes_at(data, bytes));
  inner_.send(host.data_ptr<uint8_t>(), bytes, to);
}

void HostStagedCommunicator::recv(void* data, size_t bytes, int from) {
  if (!on_device(data)) return inner_.recv(data, bytes, from);
  auto host = torch::empty({int64_t(bytes)}, torch::kUInt8);
  inner_.recv(host.data_ptr<uint8_t>(), bytes, from);
  bytes_at(data, bytes).copy_(host);
}

void HostStagedCommunicator::all_gather_bytes(const void* mine, size_t bytes, void* all) {
  if (!on_device(all)) return inner_.all_gather_bytes(mine, bytes, all);
  auto host_mine = host_copy(bytes_at(mine, bytes));
  auto host_all = torch::empty({int64_t(bytes) * size()}, torch::kUInt8);
  inner_.all_gather_bytes(host_mine.data_ptr<uint8_t>(), bytes, host_all.data_ptr<uint8_t>());
  bytes_at(all, bytes * size_t(size())).copy_(host_all);
}

void HostStagedCommunicator::broadcast(void* data, size_t bytes, int root) {
  if (!on_device(data)) return inner_.broadcast(data, bytes, root);
  auto host = host_copy(bytes_at(data, bytes));
  inner_.broadcast(host.data_ptr<uint8_t>(), bytes, root);
  bytes_at(data, bytes).copy_(host);
}

int HostStagedCommunicator::recv_any(void* data, size_t bytes) {
  if (!on_device(data)) return inner_.recv_any(data, bytes);
  auto host = torch::empty({int64_t(bytes)}, torch::kUInt8);
  const int from = inner_.recv_any(host.data_ptr<uint8_t>(), bytes);
  bytes_at(data, bytes).copy_(host);
  return from;
}

}  // namespace wit
