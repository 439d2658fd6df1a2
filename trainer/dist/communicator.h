// The process group a step runs on: rank, size, and the few collectives the canonical
// reduction needs. Backends: a single process (no communication) and MPI (CPU tensors).
//
// reduce_scatter_canonical is the heart of world-size independence: the sum over ranks is
// formed in one balanced binary tree over rank index (partner r xor 1, then r xor 2, ...),
// so together with each rank's local micro-batch tree the global sum is the same tree over all
// M micro-batches for any N that is a power of two dividing M.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wit::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;
  // The communication library and its version, for the witness log ("" for a single process).
  virtual std::string library_version() const { return ""; }

  // data: n floats on every rank, n divisible by size(). Afterwards block rank() (n/size
  // elements starting at rank()·n/size) holds the canonical-tree sum over ranks of that block;
  // the other blocks hold partial sums and are scratch.
  virtual void reduce_scatter_canonical(float* data, int64_t n);
  // As above with uneven blocks: block r is counts[r] elements (zero allowed), blocks laid out
  // one after another in rank order. Used by sharded training, where a unit's parameters fall
  // unevenly across the ranks' contiguous shards.
  virtual void reduce_scatter_canonical_v(float* data, const std::vector<int64_t>& counts) = 0;
  // data: n floats, n divisible by size(); block r of rank r is copied to every rank.
  virtual void all_gather(float* data, int64_t n) = 0;
  // Rank r's counts[r] floats at `mine`, concatenated in rank order into `all` on every rank.
  virtual void all_gather_v(const float* mine, float* all, const std::vector<int64_t>& counts) = 0;
  // Point to point, for streaming a sharded state through one rank.
  virtual void send(const void* data, size_t bytes, int to) = 0;
  virtual void recv(void* data, size_t bytes, int from) = 0;
  // Every rank's `bytes` bytes at `mine`, concatenated in rank order into `all` (size·bytes).
  virtual void all_gather_bytes(const void* mine, size_t bytes, void* all) = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Receives `bytes` bytes from whichever rank's send() arrives first; returns that rank.
  // Backends without such a receive throw.
  virtual int recv_any(void* data, size_t bytes);
  virtual void barrier() = 0;
  // Brings the whole job down (other ranks included) after a fatal error on this rank.
  virtual void abort(int code) = 0;

  bool is_root() const { return rank() == 0; }
  // Whether collectives may be called from a helper thread (one thread at a time), so that
  // communication can overlap computation.
  virtual bool supports_helper_thread() const { return false; }
};

// One exchange of the canonical reduce-scatter (recursive halving). At distance d = 1, 2, 4, ...
// a rank pairs with partner = rank xor d, sends its partial sums of the `send` blocks and adds
// the partner's partial sums of the `keep` blocks (ascending block order on both sides). After
// the last exchange block `rank` holds the balanced tree over all ranks. Every backend follows
// this one schedule, so the tree is defined in one place.
struct HalvingExchange {
  int partner = 0;
  std::vector<int64_t> send, keep;
};
std::vector<HalvingExchange> halving_schedule(int rank, int size);
// Offsets of blocks laid one after another: start[i] .. start[i+1]; checks counts >= 0.
std::vector<int64_t> block_starts(const std::vector<int64_t>& counts, int size);

// Runs `body` on every rank (collective). When it throws an Error on any rank, every rank throws
// the same Error, naming the first rank that failed: a failure only some ranks see (a file one
// rank checks, a disk one host reads) cannot leave the others waiting in the next collective.
void agree_on_errors(Communicator& comm, const std::function<void()>& body);

// One process: every collective is the identity.
std::unique_ptr<Communicator> make_single_process();

// n floats summed over ranks in the order the ranks' messages reach rank 0, then broadcast:
// the bits depend on timing (dist.reduction = arrival; never certifiable).
void sum_in_arrival_order(Communicator& comm, float* data, int64_t n);

// Sum of one double per rank in the canonical tree over ranks (size a power of two).
double sum_canonical(Communicator& comm, double mine);

// Valid world sizes for M micro-batches: powers of two dividing M.
std::vector<int> valid_world_sizes(int64_t micro_batches);
// Throws an Error listing the valid sizes when `world` cannot run M micro-batches canonically.
void check_world_size(int world, int64_t micro_batches);

// This process's rank on its node, as launchers give it: OMPI_COMM_WORLD_LOCAL_RANK,
// MPI_LOCALRANKID or SLURM_LOCALID, in that order (MPI launchers first: inside a Slurm allocation
// mpirun's processes inherit the batch step's SLURM_LOCALID). 0 for a one-process job; throws
// when none is set in a larger one, or a value is not a rank. Picks a process's GPU.
int local_rank(int world_size);
// The number of processes on this node: OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or
// SLURM_NTASKS_PER_NODE; 1 when none is set.
int local_size();

}  // namespace wit::dist
