// The MPI backend of Communicator (CPU buffers), and how a process finds out whether it was
// started by a launcher (mpirun, srun) and should join a process group at all.
#pragma once

#include <memory>

#include "trainer/dist/communicator.h"

namespace wit::dist {

// True when mpirun/srun started this process (their environment variables are present).
bool launched_by_mpi();

// Initialises MPI (once per process) and returns the world group; finalised on destruction.
std::unique_ptr<Communicator> make_mpi();

// MPI when launched by mpirun/srun, else a single process.
std::unique_ptr<Communicator> make_communicator();

}  // namespace wit::dist
