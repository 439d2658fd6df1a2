#include "trainer/dist/communicator.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace wit::dist {

namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  void reduce_scatter_canonical_v(float*, const std::vector<int64_t>&) override {}
  void all_gather(float*, int64_t) override {}
  void all_gather_v(const float* mine, float* all, const std::vector<int64_t>& counts) override {
    if (mine != all) std::memcpy(all, mine, size_t(counts.at(0)) * sizeof(float));
  }
  void send(const void*, size_t, int to) override {
    fail("send to rank {} in a single process", to);
  }
  void recv(void*, size_t, int from) override {
    fail("receive from rank {} in a single process", from);
  }
  void all_gather_bytes(const void* mine, size_t bytes, void* all) override {
    std::memcpy(all, mine, bytes);
  }
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
  void abort(int) override {}
};

}  // namespace

void Communicator::reduce_scatter_canonical(float* data, int64_t n) {
  WIT_CHECK(n % size() == 0, "reduce-scatter of {} elements over {} ranks", n, size());
  reduce_scatter_canonical_v(data, std::vector<int64_t>(static_cast<size_t>(size()), n / size()));
}

void agree_on_errors(Communicator& comm, const std::function<void()>& body) {
  if (comm.size() == 1) return body();
  std::string problem;
  uint8_t failed = 0;
  try {
    body();
  } catch (const Error& e) {
    problem = e.what();
    failed = 1;
  }
  std::vector<uint8_t> all(size_t(comm.size()));
  comm.all_gather_bytes(&failed, 1, all.data());
  for (int r = 0; r < comm.size(); ++r) {
    if (!all[size_t(r)]) continue;
    uint64_t n = problem.size();
    comm.broadcast(&n, sizeof n, r);
    problem.resize(size_t(n));
    if (n) comm.broadcast(problem.data(), size_t(n), r);
    throw SharedError(r == 0 ? problem : fmt::format("rank {} of {}: {}", r, comm.size(), problem),
                      comm.is_root());
  }
}

std::vector<HalvingExchange> halving_schedule(int rank, int size) {
  WIT_CHECK(size > 0 && (size & (size - 1)) == 0, "world size {} is not a power of two", size);
  std::vector<HalvingExchange> steps;
  for (int d = 1; d < size; d <<= 1) {
    HalvingExchange x;
    x.partner = rank ^ d;
    // Blocks still held agree with this rank on the bits below d; of those, the ones whose bit
    // d matches the partner go, the others stay and receive the partner's partial sums.
    for (int i = 0; i < size; ++i) {
      if ((i & (d - 1)) != (rank & (d - 1))) continue;
      ((i & d) == (x.partner & d) ? x.send : x.keep).push_back(i);
    }
    steps.push_back(std::move(x));
  }
  return steps;
}

std::vector<int64_t> block_starts(const std::vector<int64_t>& counts, int size) {
  WIT_CHECK(int64_t(counts.size()) == size, "{} block sizes for {} ranks", counts.size(), size);
  std::vector<int64_t> start(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i) {
    WIT_CHECK(counts[i] >= 0, "block {} has {} elements", i, counts[i]);
    start[i + 1] = start[i] + counts[i];
  }
  return start;
}

std::unique_ptr<Communicator> make_single_process() { return std::make_unique<SingleProcess>(); }

int Communicator::recv_any(void*, size_t) {
  fail("the {} backend cannot receive from any rank (dist.reduction = arrival needs MPI)",
       backend());
}

void sum_in_arrival_order(Communicator& comm, float* data, int64_t n) {
  const int N = comm.size();
  if (N == 1) return;
  const size_t bytes = size_t(n) * sizeof(float);
  if (comm.is_root()) {
    std::vector<float> theirs(static_cast<size_t>(n));
    for (int k = 1; k < N; ++k) {
      comm.recv_any(theirs.data(), bytes);
      for (int64_t i = 0; i < n; ++i) data[i] += theirs[size_t(i)];
    }
  } else {
    comm.send(data, bytes, 0);
  }
  comm.broadcast(data, bytes, 0);
}

double sum_canonical(Communicator& comm, double mine) {
  std::vector<double> all(size_t(comm.size()));
  comm.all_gather_bytes(&mine, sizeof(double), all.data());
  // Pairwise by rank index: (r, r^1), then pairs of pairs: the same tree as the reduce-scatter.
  for (size_t stride = 1; stride < all.size(); stride *= 2)
    for (size_t r = 0; r + stride < all.size(); r += 2 * stride) all[r] = all[r] + all[r + stride];
  return all[0];
}

std::vector<int> valid_world_sizes(int64_t micro_batches) {
  std::vector<int> sizes;
  for (int64_t n = 1; n <= micro_batches && micro_batches % n == 0; n *= 2) sizes.push_back(int(n));
  return sizes;
}

void check_world_size(int world, int64_t micro_batches) {
  auto ok = valid_world_sizes(micro_batches);
  for (int n : ok)
    if (n == world) return;
  std::string list;
  for (int n : ok) list += (list.empty() ? "" : ", ") + std::to_string(n);
  fail(
      "{} processes cannot run train.micro_batches = {} canonically: the world size must be a "
      "power of two dividing it (valid: {}){}",
      world, micro_batches, list,
      world > 0 && micro_batches % world == 0 ? "" : "; or change train.micro_batches");
}

namespace {

// The value of the first of `names` that is set, as a non-negative int; -1 when none is.
int first_count(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (!value) continue;
    char* end = nullptr;
    errno = 0;
    const long r = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || errno != 0 || r < 0 || r > INT_MAX)
      fail("{}='{}' is not a process count or rank", name, value);
    return int(r);
  }
  return -1;
}

}  // namespace

int local_rank(int world_size) {
  const int r = first_count({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
  if (r >= 0) return r;
  if (world_size == 1) return 0;
  fail(
      "cannot tell which GPU this process should use: none of OMPI_COMM_WORLD_LOCAL_RANK, "
      "MPI_LOCALRANKID, SLURM_LOCALID is set (start the job with mpirun or srun)");
}

int local_size() {
  const int n = first_count({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"});
  return n > 0 ? n : 1;
}

}  // namespace wit::dist
