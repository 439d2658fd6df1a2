// Pins the environment settings that decide GPU numerics (cuBLAS workspaces, NCCL algorithms),
// so a GPU run computes the same bits every time. Plain C++: builds with or without CUDA.
//
//   for (auto& [name, value] : dist::apply_gpu_determinism()) log("{}={}", name, value);
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace wit::dist {

// Sets, overriding any value already there (determinism is not optional):
//   CUBLAS_WORKSPACE_CONFIG=:4096:8  cuBLAS chooses a GEMM's kernel (and so its reduction
//                                    order) partly by the workspace it gets; from the default
//                                    pool shared among streams that varies from run to run.
//                                    Fixed workspaces (8 of 4 MiB) make its choices repeatable;
//                                    torch's deterministic-algorithms mode requires this too.
//   NCCL_ALGO=Ring                   NCCL picks Tree, Ring, CollNet or NVLS per call by size and
//                                    topology, each reducing in its own order; pinned to Ring, a
//                                    library reduction keeps one order for a given world and
//                                    machine (still not the canonical order: docs/distributed.md).
//   NCCL_PROTO=Simple                LL and LL128 change how a reduction is split into chunks,
//                                    and so which rank starts each element's sum.
//   NCCL_NVLS_ENABLE=0               NVLink SHARP reduces inside the NVSwitch: an order (and
//                                    arithmetic) outside our control.
//   NCCL_COLLNET_ENABLE=0            the same for in-network (InfiniBand SHARP) reduction.
// The canonical collectives use only NCCL's copies and point-to-point, so their bits never
// depended on these; they fix anything else that reduces through NCCL or cuBLAS. Call before
// the first CUDA, cuBLAS or NCCL use in the process: both libraries read these at initialisation.
// Returns the settings as applied, in this order, for the run's log.
std::vector<std::pair<std::string, std::string>> apply_gpu_determinism();

}  // namespace wit::dist
