// The canonical collectives against their serial definition, run under mpirun with 1, 2 and 4
// ranks: the reduce-scatter must give, bit for bit, the balanced tree over ranks, including for
// buffers padded to a multiple of the world size.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/dist/canonical_reference.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/mpi_communicator.h"

namespace wit::dist {
namespace {

Communicator* g_comm = nullptr;

using testing::contribution;
using testing::tree_over_ranks;

TEST(Collectives, ReduceScatterAndAllGatherEqualTheSerialTree) {
  Communicator& comm = *g_comm;
  const int N = comm.size();
  for (int64_t real : {int64_t(1), int64_t(7), int64_t(1000), int64_t(4097)}) {
    const int64_t n = (real + N - 1) / N * N;  // padded as the step pads gradients
    std::vector<std::vector<float>> parts;
    for (int r = 0; r < N; ++r) {
      auto c = contribution(r, real);
      c.resize(size_t(n), 0.0f);
      parts.push_back(c);
    }
    std::vector<float> data = parts[size_t(comm.rank())];
    comm.reduce_scatter_canonical(data.data(), n);
    const int64_t B = n / N;
    for (int64_t i = comm.rank() * B; i < (comm.rank() + 1) * B; ++i)
      ASSERT_EQ(data[size_t(i)], tree_over_ranks(parts, i)) << "n=" << real << " i=" << i;
    comm.all_gather(data.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(data[size_t(i)], tree_over_ranks(parts, i)) << "n=" << real << " i=" << i;
  }
}

TEST(Collectives, TheTreeOrderIsObservable) {
  // Guards the test above: with these inputs a left-to-right sum differs from the tree.
  std::vector<std::vector<float>> parts;
  for (int r = 0; r < 4; ++r) parts.push_back(contribution(r, 1000));
  int differ = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const float fold = ((parts[0][i] + parts[1][i]) + parts[2][i]) + parts[3][i];
    differ += fold != tree_over_ranks(parts, i);
  }
  EXPECT_GT(differ, 0);
}

TEST(Collectives, SumOfDoublesFollowsTheSameTree) {
  Communicator& comm = *g_comm;
  const double mine = std::ldexp(1.0 + comm.rank(), (comm.rank() % 2) ? 60 : -3);
  double want = 0;
  std::vector<double> all;
  for (int r = 0; r < comm.size(); ++r) all.push_back(std::ldexp(1.0 + r, (r % 2) ? 60 : -3));
  for (size_t s = 1; s < all.size(); s *= 2)
    for (size_t r = 0; r + s < all.size(); r += 2 * s) all[r] = all[r] + all[r + s];
  want = all[0];
  EXPECT_EQ(sum_canonical(comm, mine), want);
}

TEST(WorldSize, PowersOfTwoDividingMAreValid) {
  EXPECT_EQ(valid_world_sizes(12), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(valid_world_sizes(8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(valid_world_sizes(3), (std::vector<int>{1}));
  EXPECT_NO_THROW(check_world_size(4, 8));
  try {
    check_world_size(3, 8);
    FAIL() << "3 ranks cannot split 8 micro-batches";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("valid: 1, 2, 4, 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wit::dist

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = wit::dist::make_communicator();
  wit::dist::g_comm = comm.get();
  // Every rank's failures count in the exit code.
  int failed = RUN_ALL_TESTS();
  int all = 0;
  std::vector<int> each(size_t(comm->size()));
  comm->all_gather_bytes(&failed, sizeof(int), each.data());
  for (int f : each) all |= f;
  return all;
}
