// The process group a step uses when its buffers live on a GPU. NCCL where it is built and each
// rank has a GPU of its own; otherwise (several ranks sharing a GPU, which NCCL refuses, or no
// NCCL backend) the CPU communicator with every device buffer staged through host memory: the
// same canonical arithmetic on the host, so the same bits, at the cost of the copies.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "trainer/compute.h"
#include "trainer/dist/communicator.h"

namespace wit {

// nullptr when the step can use `comm` itself (the CPU, or one process).
std::unique_ptr<dist::Communicator> device_communicator(dist::Communicator& comm,
                                                        const Compute& compute, bool quiet);

// `inner` with every float collective and point-to-point transfer on device memory staged
// through the host. every_buffer: stage all buffers (host ones too), so that the staging itself
// is tested on a machine without a GPU.
class HostStagedCommunicator final : public dist::Communicator {
 public:
  HostStagedCommunicator(dist::Communicator& inner, torch::Device device, bool every_buffer = false);
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend() + "+host-staging"; }
  std::string library_version() const override { return inner_.library_version(); }
  void reduce_scatter_canonical_v(float* data, const std::vector<int64_t>& counts) override;
  void all_gather(float* data, int64_t n) override;
  void all_gather_v(const float* mine, float* all, const std::vector<int64_t>& counts) override;
  void send(const void* data, size_t bytes, int to) override;
  void recv(void* data, size_t bytes, int from) override;
  void all_gather_bytes(const void* mine, size_t bytes, void* all) override;
  void broadcast(void* data, size_t bytes, int root) override;
  int recv_any(void* data, size_t bytes) override;
  void barrier() override { inner_.barrier(); }
  void abort(int code) override { inner_.abort(code); }
  bool supports_helper_thread() const override { return inner_.supports_helper_thread(); }

 private:
  bool on_device(const void* p) const;
  torch::Tensor bytes_at(const void* p, size_t bytes) const;  // a view of device memory

  dist::Communicator& inner_;
  torch::Device device_;
  bool every_buffer_;
};

}  // namespace wit
