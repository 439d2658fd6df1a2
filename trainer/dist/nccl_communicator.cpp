// The NCCL backend (see nccl_communicator.h). The canonical reduce-scatter is the MPI backend's
// recursive halving, block for block: the same pairs, the same partial sums, the same fp32 adds
// (device_add.cu), so both backends produce the same bits. NCCL's own reductions are not used.
#include "trainer/dist/nccl_communicator.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/error.h"
#include "trainer/dist/cuda_check.h"
#include "trainer/dist/device_add.h"

namespace wit::dist {

namespace {

// Point-to-point messages travel in pieces of this size whatever the memory on either side, so
// that a sender staging device memory and a receiver writing host memory post the same messages.
constexpr size_t kPiece = size_t(64) << 20;

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(Communicator& mpi)
      : mpi_(mpi), rank_(mpi.rank()), size_(mpi.size()), device_(local_cuda_device(mpi)) {
    // The process's device from here on: NCCL binds the communicator to the current device.
    WIT_CUDA(cudaSetDevice(device_));
    ncclUniqueId id{};
    if (rank_ == 0) WIT_NCCL(ncclGetUniqueId(&id));
    mpi_.broadcast(&id, sizeof id, 0);
    stream_ = make_stream();
    comm_ = NcclComm(size_, id, rank_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  std::string library_version() const override {
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v);
  }

  void reduce_scatter_canonical_v(float* data, const std::vector<int64_t>& counts) override {
    const auto start = block_starts(counts, size_);
    if (size_ == 1 || start.back() == 0) return;
    check_on_device(data, "reduce-scatter buffer");
    guarded([&] {
      WIT_CUDA(cudaDeviceSynchronize());  // the caller's work producing `data` is done
      const auto schedule = halving_schedule(rank_, size_);
      int64_t most = 0;  // the most received in one exchange
      for (const auto& x : schedule) {
        int64_t n = 0;
        for (int64_t i : x.keep) n += counts[size_t(i)];
        most = std::max(most, n);
      }
      float* theirs = scratch(most);
      for (const auto& x : schedule) {
        // Each block is one message, posted in block order on both sides, so they pair up.
        WIT_NCCL(ncclGroupStart());
        for (int64_t i : x.send)
          if (counts[size_t(i)] > 0)
            WIT_NCCL(ncclSend(data + start[size_t(i)], size_t(counts[size_t(i)]), ncclFloat32,
                              x.partner, comm_.get(), stream_.get()));
        int64_t at = 0;
        for (int64_t i : x.keep) {
          if (counts[size_t(i)] == 0) continue;
          WIT_NCCL(ncclRecv(theirs + at, size_t(counts[size_t(i)]), ncclFloat32, x.partner,
                            comm_.get(), stream_.get()));
          at += counts[size_t(i)];
        }
        WIT_NCCL(ncclGroupEnd());
        // Then, on the same stream, mine + theirs per block (a + b == b + a in IEEE).
        at = 0;
        for (int64_t i : x.keep) {
          const int64_t c = counts[size_t(i)];
          if (c == 0) continue;
          WIT_CUDA(device_add(data + start[size_t(i)], theirs + at, c, stream_.get()));
          at += c;
        }
      }
      wait();
    });
  }

  void all_gather(float* data, int64_t n) override {
    WIT_CHECK(n % size_ == 0, "all-gather of {} elements over {} ranks", n, size_);
    if (size_ == 1 || n == 0) return;
    const int64_t B = n / size_;
    check_on_device(data, "all-gather buffer");
    guarded([&] {
      WIT_CUDA(cudaDeviceSynchronize());  // the caller's work producing `data` is done
      // In place: this rank's block already sits where NCCL reads it (recvbuff + rank·B).
      WIT_NCCL(ncclAllGather(data + rank_ * B, data, size_t(B), ncclFloat32, comm_.get(),
                             stream_.get()));
      wait();
    });
  }

  void all_gather_v(const float* mine, float* all, const std::vector<int64_t>& counts) override {
    WIT_CHECK(int64_t(counts.size()) == size_, "{} block sizes for {} ranks", counts.size(), size_);
    std::vector<int64_t> start(size_t(size_) + 1, 0);
    for (size_t r = 0; r < size_t(size_); ++r) {
      WIT_CHECK(counts[r] >= 0, "block {} has {} elements", r, counts[r]);
      start[r + 1] = start[r] + counts[r];
    }
    if (start[size_t(size_)] == 0) return;
    check_on_device(all, "all-gather destination");
    if (counts[size_t(rank_)] > 0) check_on_device(mine, "all-gather source");
    guarded([&] {
      WIT_CUDA(cudaDeviceSynchronize());  // the caller's work producing `mine` is done
      // NCCL has no uneven all-gather: one broadcast per rank with data, fused in a group. A
      // root's broadcast also copies its own block into place when `mine` is elsewhere.
      WIT_NCCL(ncclGroupStart());
      for (int r = 0; r < size_; ++r) {
        const int64_t c = counts[size_t(r)];
        if (c == 0) continue;
        float* dst = all + start[size_t(r)];
        const float* src = r == rank_ ? mine : dst;  // read on the root only
        WIT_NCCL(ncclBroadcast(src, dst, size_t(c), ncclFloat32, r, comm_.get(), stream_.get()));
      }
      WIT_NCCL(ncclGroupEnd());
      wait();
    });
  }

  void send(const void* data, size_t bytes, int to) override {
    const auto* p = static_cast<const char*>(data);
    if (bytes == 0) return;
    if (!is_device(data)) {
      for (size_t off = 0; off < bytes; off += kPiece)
        mpi_.send(p + off, std::min(kPiece, bytes - off), to);
      return;
    }
    CurrentDevice on(device_);
    WIT_CUDA(cudaDeviceSynchronize());  // the caller's work producing `data` is done
    std::vector<char> host(std::min(kPiece, bytes));
    for (size_t off = 0; off < bytes; off += kPiece) {
      const size_t piece = std::min(kPiece, bytes - off);
      WIT_CUDA(cudaMemcpy(host.data(), p + off, piece, cudaMemcpyDeviceToHost));
      mpi_.send(host.data(), piece, to);
    }
  }

  void recv(void* data, size_t bytes, int from) override {
    auto* p = static_cast<char*>(data);
    if (bytes == 0) return;
    if (!is_device(data)) {
      for (size_t off = 0; off < bytes; off += kPiece)
        mpi_.recv(p + off, std::min(kPiece, bytes - off), from);
      return;
    }
    CurrentDevice on(device_);
    WIT_CUDA(cudaDeviceSynchronize());  // no earlier work still reads the old contents
    std::vector<char> host(std::min(kPiece, bytes));
    for (size_t off = 0; off < bytes; off += kPiece) {
      const size_t piece = std::min(kPiece, bytes - off);
      mpi_.recv(host.data(), piece, from);
      // Returns once `host` is staged for the copy, so it can take the next piece.
      WIT_CUDA(cudaMemcpy(p + off, host.data(), piece, cudaMemcpyHostToDevice));
    }
    WIT_CUDA(cudaDeviceSynchronize());  // copies from pageable memory may still be in flight
  }

  void all_gather_bytes(const void* mine, size_t bytes, void* all) override {
    mpi_.all_gather_bytes(mine, bytes, all);
  }
  void broadcast(void* data, size_t bytes, int root) override { mpi_.broadcast(data, bytes, root); }
  void barrier() override { mpi_.barrier(); }

  void abort(int code) override {
    comm_.abort();
    mpi_.abort(code);
  }

 private:
  // Runs one collective on this communicator's device, its arguments already checked; any
  // failure now leaves the NCCL communicator to be aborted rather than finalised.
  template <typename F>
  void guarded(F&& collective) {
    try {
      CurrentDevice on(device_);
      collective();
    } catch (...) {
      comm_.mark_failed();
      throw;
    }
  }

  bool is_device(const void* p) const {
    cudaPointerAttributes a{};
    WIT_CUDA(cudaPointerGetAttributes(&a, p));
    return a.type == cudaMemoryTypeDevice;
  }

  void check_on_device(const void* p, const char* what) const {
    cudaPointerAttributes a{};
    WIT_CUDA(cudaPointerGetAttributes(&a, p));
    WIT_CHECK(a.type == cudaMemoryTypeDevice && a.device == device_,
              "NCCL backend: the {} at {} is not device memory on CUDA device {}", what, p,
              device_);
  }

  // n floats of scratch on the device, kept between calls.
  float* scratch(int64_t n) {
    if (n > scratch_size_) {
      scratch_.reset();
      scratch_size_ = 0;
      scratch_ = device_alloc<float>(size_t(n));
      scratch_size_ = n;
    }
    return scratch_.get();
  }

  // Blocks until the stream's work is done. Polls rather than synchronising so that an
  // asynchronous NCCL error (a peer or the network failing) is raised instead of waited on.
  void wait() {
    for (;;) {
      const cudaError_t rc = cudaStreamQuery(stream_.get());
      if (rc == cudaSuccess) return;
      if (rc != cudaErrorNotReady) cuda_check(rc, "cudaStreamQuery(stream)", __FILE__, __LINE__);
      ncclResult_t async = ncclSuccess;
      WIT_NCCL(ncclCommGetAsyncError(comm_.get(), &async));
      nccl_check(async, "a collective in flight", __FILE__, __LINE__);
      std::this_thread::yield();
    }
  }

  Communicator& mpi_;
  const int rank_, size_, device_;
  // Destroyed in reverse: the communicator before the scratch and the stream it uses.
  CudaStream stream_;
  DeviceArray<float> scratch_;
  int64_t scratch_size_ = 0;
  NcclComm comm_;
};

}  // namespace

int local_cuda_device(const Communicator& mpi) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc == cudaErrorNoDevice || (rc == cudaSuccess && count == 0)) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    fail("rank {}: no CUDA device is visible to this process (CUDA_VISIBLE_DEVICES={})", mpi.rank(),
         visible ? visible : "unset");
  }
  cuda_check(rc, "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
  return local_rank(mpi.size()) % count;
}

std::unique_ptr<Communicator> make_nccl(Communicator& mpi) {
  return std::make_unique<NcclCommunicator>(mpi);
}

}  // namespace wit::dist
