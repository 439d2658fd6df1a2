// The NCCL backend against the serial definition and against the MPI backend, bit for bit:
// mpirun -np N, one GPU per rank (N a power of two). Not run by ctest, which has no GPUs; see
// docs/gpu.md for the command.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/dist/canonical_reference.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/cuda_check.h"
#include "trainer/dist/mpi_communicator.h"
#include "trainer/dist/nccl_communicator.h"

namespace wit::dist {
namespace {

Communicator* g_mpi = nullptr;
Communicator* g_nccl = nullptr;

using testing::contribution;
using testing::tree_over_ranks;

uint32_t bits(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// "" when got[i] has the bits of want(i) for every i in [lo, hi), else the first difference and
// how many. Checked with EXPECT (never ASSERT) so that every rank goes on to the next collective
// and none is left waiting on a rank that returned early.
template <typename Want>
std::string mismatch(const std::vector<float>& got, int64_t lo, int64_t hi, Want want) {
  int64_t first = -1, count = 0;
  for (int64_t i = lo; i < hi; ++i)
    if (bits(got[size_t(i)]) != bits(want(i))) {
      if (first < 0) first = i;
      ++count;
    }
  if (count == 0) return "";
  return "element " + std::to_string(first) + " is " + std::to_string(got[size_t(first)]) +
         ", not " + std::to_string(want(first)) + " (" + std::to_string(count) + " differ)";
}

DeviceArray<float> to_device(const std::vector<float>& host) {
  auto dev = device_alloc<float>(std::max<size_t>(host.size(), 1));
  WIT_CUDA(cudaMemcpy(dev.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return dev;
}

std::vector<float> to_host(const float* dev, size_t n) {
  std::vector<float> host(n);
  WIT_CUDA(cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

// Every rank's contribution to a buffer of n floats (the first `real` of them nonzero).
std::vector<std::vector<float>> all_parts(int world, int64_t real, int64_t n) {
  std::vector<std::vector<float>> parts;
  for (int r = 0; r < world; ++r) {
    auto c = contribution(r, real);
    c.resize(size_t(n), 0.0f);
    parts.push_back(c);
  }
  return parts;
}

TEST(NcclCollectives, ReportsItsBackendAndTheMpiRanks) {
  EXPECT_EQ(g_nccl->backend(), "nccl");
  EXPECT_EQ(g_nccl->rank(), g_mpi->rank());
  EXPECT_EQ(g_nccl->size(), g_mpi->size());
}

TEST(NcclCollectives, ReduceScatterAndAllGatherEqualTheSerialTree) {
  Communicator& comm = *g_nccl;
  const int N = comm.size();
  // Past a million elements the add kernel's grid-stride loop wraps.
  for (int64_t real : {int64_t(1), int64_t(7), int64_t(1000), int64_t(4097), int64_t(3) << 20}) {
    const int64_t n = (real + N - 1) / N * N;  // padded as the step pads gradients
    const auto parts = all_parts(N, real, n);
    auto dev = to_device(parts[size_t(comm.rank())]);
    comm.reduce_scatter_canonical(dev.get(), n);
    auto data = to_host(dev.get(), size_t(n));
    const int64_t B = n / N;
    auto tree = [&](int64_t i) { return tree_over_ranks(parts, i); };
    EXPECT_EQ(mismatch(data, comm.rank() * B, (comm.rank() + 1) * B, tree), "") << "n=" << real;
    comm.all_gather(dev.get(), n);
    data = to_host(dev.get(), size_t(n));
    EXPECT_EQ(mismatch(data, 0, n, tree), "") << "n=" << real;
  }
}

TEST(NcclCollectives, ReduceScatterGivesTheMpiBackendsBits) {
  const int N = g_nccl->size(), me = g_nccl->rank();
  const int64_t n = int64_t(N) * 12345;
  auto host = contribution(me, n);
  auto dev = to_device(host);
  g_mpi->reduce_scatter_canonical(host.data(), n);
  g_nccl->reduce_scatter_canonical(dev.get(), n);
  const auto gpu = to_host(dev.get(), size_t(n));
  const int64_t B = n / N;
  EXPECT_EQ(mismatch(gpu, me * B, (me + 1) * B, [&](int64_t i) { return host[size_t(i)]; }), "");
}

TEST(NcclCollectives, UnevenBlocksEqualTheSerialTree) {
  Communicator& comm = *g_nccl;
  const int N = comm.size(), me = comm.rank();
  // Uneven, with empty blocks (every third rank's) as sharded training produces.
  std::vector<int64_t> counts, start{0};
  for (int r = 0; r < N; ++r) {
    counts.push_back(r % 3 == 1 ? 0 : 1000 + 17 * r);
    start.push_back(start.back() + counts.back());
  }
  const int64_t n = start.back();
  const auto parts = all_parts(N, n, n);
  auto dev = to_device(parts[size_t(me)]);
  comm.reduce_scatter_canonical_v(dev.get(), counts);
  const auto data = to_host(dev.get(), size_t(n));
  auto tree = [&](int64_t i) { return tree_over_ranks(parts, i); };
  EXPECT_EQ(mismatch(data, start[size_t(me)], start[size_t(me) + 1], tree), "");

  // Out of place: this rank's block from its own buffer into a fresh one.
  const std::vector<float> mine(data.begin() + start[size_t(me)],
                                data.begin() + start[size_t(me) + 1]);
  auto mine_dev = to_device(mine);
  auto all_dev = to_device(std::vector<float>(size_t(n), -1.0f));
  comm.all_gather_v(mine_dev.get(), all_dev.get(), counts);
  auto all = to_host(all_dev.get(), size_t(n));
  EXPECT_EQ(mismatch(all, 0, n, tree), "") << "out of place";

  // In place: the block already sits at this rank's offset.
  comm.all_gather_v(dev.get() + start[size_t(me)], dev.get(), counts);
  all = to_host(dev.get(), size_t(n));
  EXPECT_EQ(mismatch(all, 0, n, tree), "") << "in place";
}

TEST(NcclCollectives, PointToPointMovesDeviceAndHostMemory) {
  Communicator& comm = *g_nccl;
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  // Longer than one staging piece (64 MiB), not a multiple of it.
  const size_t bytes = (size_t(64) << 20) + 4 * 1001;
  std::vector<float> sent = contribution(7, int64_t(bytes / sizeof(float)));
  if (comm.rank() == 0) {
    // Device to host, then host back to device.
    auto dev = to_device(sent);
    comm.send(dev.get(), bytes, 1);
    auto back = device_alloc<float>(sent.size());
    comm.recv(back.get(), bytes, 1);
    const auto got = to_host(back.get(), sent.size());
    EXPECT_EQ(std::memcmp(got.data(), sent.data(), bytes), 0);
  } else if (comm.rank() == 1) {
    std::vector<float> got(sent.size());
    comm.recv(got.data(), bytes, 0);
    EXPECT_EQ(std::memcmp(got.data(), sent.data(), bytes), 0);
    comm.send(got.data(), bytes, 0);
  }
  comm.barrier();
}

TEST(NcclCollectives, HostBuffersAreRejected) {
  // Every rank rejects its buffer before any communication, so none is left waiting.
  std::vector<float> host(size_t(g_nccl->size()) * 4, 1.0f);
  const std::vector<int64_t> counts(size_t(g_nccl->size()), 4);
  try {
    g_nccl->all_gather_v(host.data(), host.data(), counts);
    FAIL() << "a host buffer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not device memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wit::dist

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto mpi = wit::dist::make_mpi();
  std::unique_ptr<wit::dist::Communicator> nccl;
  try {
    nccl = wit::dist::make_nccl(*mpi);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", mpi->rank(), e.what());
    std::fflush(stderr);
    mpi->abort(1);
    return 1;
  }
  wit::dist::g_mpi = mpi.get();
  wit::dist::g_nccl = nccl.get();
  // Every rank's failures count in the exit code.
  int failed = RUN_ALL_TESTS();
  int all = 0;
  std::vector<int> each(size_t(mpi->size()));
  mpi->all_gather_bytes(&failed, sizeof(int), each.data());
  for (int f : each) all |= f;
  return all;
}
