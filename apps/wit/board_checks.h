// The board's checks with the trainer's own code (torch): what `wit board serve` runs at
// submission and in its pool, and what `wit board worker` runs (apps/wit/board_worker.cpp).
#pragma once

#include <filesystem>
#include <vector>

#include "board/worker.h"

namespace wit::cli {

// Audit: structure and data stages of `wit verify`; replay: one segment bit for bit, or the
// model and evaluation stages (board::kFinalSegment). Single process.
board::Checks replay_checks();
// The prepared datasets in `dirs`, by manifest root and layout.
board::Datasets index_datasets(const std::vector<std::filesystem::path>& dirs);

}  // namespace wit::cli
