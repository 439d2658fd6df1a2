// The NCCL backend of Communicator: the collectives on GPU (device) buffers, the canonical
// reduce-scatter giving the MPI backend's bits. Built only where CUDA and NCCL are (WIT_HAVE_NCCL).
//
//   auto mpi = make_mpi();
//   auto gpu = make_nccl(*mpi);                  // every rank; picks and makes current its GPU
//   gpu->reduce_scatter_canonical(grad_dev, n);  // grad_dev: n floats in device memory
#pragma once

#include <memory>

#include "trainer/dist/communicator.h"

namespace wit::dist {

// The CUDA device this process uses: its rank on its node (OMPI_COMM_WORLD_LOCAL_RANK,
// MPI_LOCALRANKID or SLURM_LOCALID, in that order; 0 for a one-process job) modulo the number of
// visible devices. Throws when no device is visible or the local rank is unknown.
int local_cuda_device(const Communicator& mpi);

// An NCCL communicator over the ranks of `mpi`, which must outlive it. Collective: every rank
// calls it (a failure on one rank leaves the others waiting: bring the job down with mpi.abort).
// It makes local_cuda_device(mpi) the current device. Its operations:
// - reduce_scatter_canonical[_v], all_gather[_v]: device pointers on that device. Each waits for
//   all work already issued on the device (any stream) before reading, and returns when its own
//   work is complete, so the buffers are ready for any stream afterwards. all_gather_v's `mine`
//   is either `all` + this rank's offset or disjoint from `all`.
// - send / recv: device or host memory on either side; through `mpi`, device memory staged
//   through the host (a rare, host-bound path: streaming a sharded state to one rank).
// - all_gather_bytes, broadcast, barrier: host memory, through `mpi` (control plane).
// - abort: aborts the NCCL communicator, then `mpi`, which brings the whole job down.
std::unique_ptr<Communicator> make_nccl(Communicator& mpi);

}  // namespace wit::dist
