#include "trainer/dist/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
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

// Seconds a blocking call may make no progress before the job is ended: WIT_COLLECTIVE_TIMEOUT,
// default 600, 0 = wait forever. A peer whose host or link is gone leaves TCP waiting for many
// minutes; no rank of a healthy job waits this long for another (checkpoint writes included).
int collective_timeout_seconds() {
  const char* v = std::getenv("WIT_COLLECTIVE_TIMEOUT");
  if (!v || !*v) return 600;
  char* end = nullptr;
  const long t = std::strtol(v, &end, 10);
  if (*end != '\0' || t < 0 || t > 86400 * 7)
    fail("WIT_COLLECTIVE_TIMEOUT={}: expected whole seconds, 0 (no limit) to 604800", v);
  return int(t);
}

// Ends the job when one blocking call of this process has waited longer than the timeout,
// naming the rank (and host) it waited on. One call at a time is in flight (MPI_THREAD_SERIALIZED).
class Watchdog {
 public:
  Watchdog(int timeout_s, int rank, std::vector<std::string> hosts)
      : timeout_s_(timeout_s), rank_(rank), hosts_(std::move(hosts)) {
    if (timeout_s_ > 0) thread_ = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // What this process waits in; peer -1: the whole group.
  void enter(const char* op, int peer) {
    op_.store(op);
    peer_.store(peer);
    since_.store(now_ms());
  }
  void leave() { since_.store(0); }

 private:
  static int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) {
      const int64_t since = since_.load();
      if (since == 0 || now_ms() - since < int64_t(timeout_s_) * 1000) continue;
      int peer = peer_.load();
      // A group call of two ranks waits on exactly one: name it. With more, MPI does not say
      // which rank has not arrived.
      if (peer < 0 && hosts_.size() == 2) peer = 1 - rank_;
      const std::string waited =
          peer >= 0 ? fmt::format("rank {} on host {}", peer, hosts_[size_t(peer)])
                    : std::string("the other ranks");
      std::fprintf(stderr,
                   "wit: rank %d on host %s: %s has waited %d s for %s; that rank or its host "
                   "(or the link to it) is lost or stalled. Ending the job "
                   "(WIT_COLLECTIVE_TIMEOUT=%d).\n",
                   rank_, hosts_[size_t(rank_)].c_str(), op_.load(), timeout_s_, waited.c_str(),
                   timeout_s_);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
      std::_Exit(1);  // MPI_Abort does not return; should it, the process still ends
    }
  }

  const int timeout_s_;
  const int rank_;
  const std::vector<std::string> hosts_;
  std::atomic<const char*> op_{""};
  std::atomic<int> peer_{-1};
  std::atomic<int64_t> since_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Marks one blocking call for the watchdog.
class Waiting {
 public:
  Waiting(Watchdog* w, const char* op, int peer = -1) : w_(w) {
    if (w_) w_->enter(op, peer);
  }
  ~Waiting() {
    if (w_) w_->leave();
  }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  Watchdog* w_;
};

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
    const int timeout = collective_timeout_seconds();
    if (size_ > 1 && timeout > 0) watchdog_.emplace(timeout, rank_, host_names());
  }
  ~MpiCommunicator() override {
    watchdog_.reset();
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
      Waiting w(wd(), "a reduce-scatter", x.partner);
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
    Waiting w(wd(), "an all-gather");
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
    Waiting w(wd(), "an all-gather");
    WIT_MPI(MPI_Allgatherv(in_place ? MPI_IN_PLACE : mine, c[size_t(rank_)], MPI_FLOAT, all,
                           c.data(), displ.data(), MPI_FLOAT, comm_));
  }

  void send(const void* data, size_t bytes, int to) override {
    const char* p = static_cast<const char*>(data);
    Waiting w(wd(), "a send", to);
    for (size_t off = 0; off < bytes; off += size_t(kMaxCount))
      WIT_MPI(
          MPI_Send(p + off, int(std::min(size_t(kMaxCount), bytes - off)), MPI_BYTE, to, 1, comm_));
  }

  void recv(void* data, size_t bytes, int from) override {
    char* p = static_cast<char*>(data);
    Waiting w(wd(), "a receive", from);
    for (size_t off = 0; off < bytes; off += size_t(kMaxCount))
      WIT_MPI(MPI_Recv(p + off, int(std::min(size_t(kMaxCount), bytes - off)), MPI_BYTE, from, 1,
                       comm_, MPI_STATUS_IGNORE));
  }

  int recv_any(void* data, size_t bytes) override {
    char* p = static_cast<char*>(data);
    MPI_Status status;
    Waiting w(wd(), "a receive");
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
    Waiting w(wd(), "an all-gather");
    WIT_MPI(MPI_Allgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, comm_));
  }

  void broadcast(void* data, size_t bytes, int root) override {
    auto* p = static_cast<char*>(data);
    Waiting w(wd(), "a broadcast", rank_ == root ? -1 : root);
    for (size_t off = 0; off < bytes; off += size_t(kMaxCount))
      WIT_MPI(
          MPI_Bcast(p + off, int(std::min(size_t(kMaxCount), bytes - off)), MPI_BYTE, root, comm_));
  }

  void barrier() override {
    Waiting w(wd(), "a barrier");
    WIT_MPI(MPI_Barrier(comm_));
  }

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

  // Every rank's host name, in rank order (MPI_Get_processor_name).
  std::vector<std::string> host_names() {
    char mine[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    WIT_MPI(MPI_Get_processor_name(mine, &len));
    std::vector<char> all(size_t(size_) * MPI_MAX_PROCESSOR_NAME);
    WIT_MPI(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                          MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm_));
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.emplace_back(all.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME);
    return out;
  }
  Watchdog* wd() { return watchdog_ ? &*watchdog_ : nullptr; }

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::optional<Watchdog> watchdog_;
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
