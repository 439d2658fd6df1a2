#include "trainer/dist/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

#include "core/error.h"

namespace wit::dist {

namespace {

// Every MPI call is checked: a failure names the call, the call site and MPI's own message.
void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fail("MPI: {} failed at {}:{}: {}", call, file, line, std::string(msg, size_t(len)));
}
#define WIT_MPI(call) mpi_check((call), #call, __FILE__, __LINE__)

// MPI counts are ints: large buffers travel in pieces.
constexpr int64_t kMaxCount = int64_t(1) << 30;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    WIT_MPI(MPI_Initialized(&initialized));
    if (!initialized) {
      int provided = 0;
      // SERIALIZED: a helper thread may run collectives while the main thread computes.
      WIT_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
      owns_runtime_ = true;
    }
    int level = 0;
    WIT_MPI(MPI_Query_thread(&level));
    threads_ok_ = level >= MPI_THREAD_SERIALIZED;
    WIT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    WIT_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    WIT_MPI(MPI_Comm_rank(comm_, &rank_));
    WIT_MPI(MPI_Comm_size(comm_, &size_));
  }
  ~MpiCommunicator() override {
    MPI_Comm_free(&comm_);
    if (owns_runtime_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  std::string library_version() const override {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(text, &len);
    std::string v(text, size_t(std::max(len, 0)));
    return v.substr(0, v.find_first_of(",\n"));  // "Open MPI v4.1.4"
  }
  bool supports_helper_thread() const override { return threads_ok_; }

  void reduce_scatter_canonical_v(float* data, const std::vector<int64_t>& counts) override {
    const auto start = block_starts(counts, size_);
    if (size_ == 1) return;
    send_.resize(size_t(start.back()));
    recv_.resize(size_t(start.back()));
    for (const auto& x : halving_schedule(rank_, size_)) {
      int64_t packed = 0, expect = 0;
      for (int64_t i : x.send) {
        std::copy(data + start[i], data + start[i + 1], send_.data() + packed);
        packed += counts[size_t(i)];
      }
      for (int64_t i : x.keep) expect += counts[size_t(i)];
      sendrecv(send_.data(), packed, recv_.data(), expect, x.partner);
      int64_t at = 0;
      for (int64_t i : x.keep) {
        float* block = data + start[i];
        const float* theirs = recv_.data() + at;
        for (int64_t k = 0; k < counts[size_t(i)]; ++k) block[k] += theirs[k];  // a+b == b+a
        at += counts[size_t(i)];
      }
    }
  }

  void all_gather(float* data, int64_t n) override {
    const int64_t B = n / size_;
    WIT_CHECK(n % size_ == 0, "all-gather of {} elements over {} ranks", n, size_);
    if (size_ == 1) return;
    if (B <= kMaxCount) {
      WIT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, int(B), MPI_FLOAT, comm_));
      return;
    }
    for (int r = 0; r < size_; ++r)
      for (int64_t off = 0; off < B; off += kMaxCount)
        WIT_MPI(
            MPI_Bcast(data + r * B + off, int(std::min(kMaxCount, B - off)), MPI_FLOAT, r, comm_));
  }

  void all_gather_v(const float* mine, float* all, const std::vector<int64_t>& counts) override {
    std::vector<int> c(static_cast<size_t>(size_)), displ(static_cast<size_t>(size_));
    int64_t at = 0;
    for (int r = 0; r < size_; ++r) {
      WIT_CHECK(at + counts[size_t(r)] <= INT_MAX, "all-gather of more than 2^31 elements");
      c[size_t(r)] = int(counts[size_t(r)]);
      displ[size_t(r)] = int(at);
      at += counts[size_t(r)];
    }
    const bool in_place = mine == all + displ[size_t(rank_)];
    WIT_MPI(MPI_Allgatherv(in_place ? MPI_IN_PLACE : mine, c[size_t(rank_)], MPI_FLOAT, all,
                           c.data(), displ.data(), MPI_FLOAT, comm_));
  }

  void send(const void* data, size_t bytes, int to) override {
    const char* p = static_cast<const char*>(data);
    for (size_t off = 0; off < bytes; off += size_t(kMaxCount))
      WIT_MPI(
          MPI_Send(p + off, int(std::min(size_t(kMaxCount), bytes - off)), MPI_BYTE, to, 1, comm_));
  }

  void recv(void* data, size_t bytes, int from) override {
    char* p = static_cast<char*>(data);
    for (size_t off = 0; off < bytes; off += size_t(kMaxCount))
      WIT_MPI(MPI_Recv(p + off, int(std::min(size_t(kMaxCount), bytes - off)), MPI_BYTE, from, 1,
                       comm_, MPI_STATUS_IGNORE));
  }

  int recv_any(void* data, size_t bytes) override {
    char* p = static_cast<char*>(data);
    MPI_Status status;
    // The first chunk from whoever is first; the rest from that rank (send() chunks in order).
    WIT_MPI(MPI_Recv(p, int(std::min(size_t(kMaxCount), bytes)), MPI_BYTE, MPI_ANY_SOURCE, 1, comm_,
                     &status));
    const int from = status.MPI_SOURCE;
    for (size_t off = size_t(kMaxCount); off < bytes; off += size_t(kMaxCount))
      WIT_MPI(MPI_Recv(p + off, int(std::min(size_t(kMaxCount), bytes - off)), MPI_BYTE, from, 1,
                       comm_, MPI_STATUS_IGNORE));
    return from;
  }

  void all_gather_bytes(const void* mine, size_t bytes, void* all) override {
    WIT_CHECK(bytes <= size_t(INT_MAX), "all-gather of {} bytes", bytes);
    WIT_MPI(MPI_Allgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, comm_));
  }

  void broadcast(void* data, size_t bytes, int root) override {
    auto* p = static_cast<char*>(data);
    for (size_t off = 0; off < bytes; off += size_t(kMaxCount))
      WIT_MPI(
          MPI_Bcast(p + off, int(std::min(size_t(kMaxCount), bytes - off)), MPI_BYTE, root, comm_));
  }

  void barrier() override { WIT_MPI(MPI_Barrier(comm_)); }

  void abort(int code) override { MPI_Abort(comm_, code); }

 private:
  void sendrecv(const float* send, int64_t n_send, float* recv, int64_t n_recv, int partner) {
    for (int64_t off = 0; off < std::max(n_send, n_recv); off += kMaxCount) {
      const int cs = int(std::clamp<int64_t>(n_send - off, 0, kMaxCount));
      const int cr = int(std::clamp<int64_t>(n_recv - off, 0, kMaxCount));
      WIT_MPI(MPI_Sendrecv(send + off, cs, MPI_FLOAT, partner, 0, recv + off, cr, MPI_FLOAT,
                           partner, 0, comm_, MPI_STATUS_IGNORE));
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool owns_runtime_ = false;
  bool threads_ok_ = false;
  std::vector<float> send_, recv_;
};

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

std::unique_ptr<Communicator> make_mpi() { return std::make_unique<MpiCommunicator>(); }

std::unique_ptr<Communicator> make_communicator() {
  return launched_by_mpi() ? make_mpi() : make_single_process();
}

}  // namespace wit::dist
