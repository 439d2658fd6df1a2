// Tests that share one PostgreSQL database start from no board tables.
#pragma once

#include <string>

#include "board/db.h"

namespace wit::board::testing {

inline void drop_board_tables(Db& db) {
  for (const char* t : {"board_evidence", "board_probes", "board_committed_states", "board_job_holds", "board_draw_coins", "board_reports", "board_jobs", "board_draws", "board_segments",
                        "board_results", "board_revoked", "board_uploads", "board_trainer_keys", "board_certificates", "board_trajectories", "board_entries", "board_participants"})
    db.exec(std::string("DROP TABLE IF EXISTS ") + t);
}

}  // namespace wit::board::testing
