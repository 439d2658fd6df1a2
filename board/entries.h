// Entries: a run submitted to a track. The board reads the run's witness log from its own file
// store (never the submitter's word), checks it whole (chains, signatures, schedules, complete),
// checks it against the track's rules and that every checkpoint the log commits to was
// uploaded, and records the entry with the log's signed head. Its receipt, signed with the
// board's key, binds the entry to that head: a later upload cannot swap the run.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "board/blob_store.h"
#include "board/db.h"
#include "board/jobs.h"
#include "board/participants.h"
#include "board/track.h"
#include "board/worker.h"
#include "record/signing.h"

namespace wit::board {

struct Submission {
  std::string track, name;
  std::map<std::string, std::string> files;  // run file name -> SHA-256 (hex)
};

// Parses a submission's JSON; an Error names what is missing or malformed.
Submission parse_submission(const std::string& body);

// What the board needs to take an entry in: its verification policy, the checks it runs at
// once (structure and data audit), the datasets it holds, and where it links runs to check them.
struct Intake {
  const VerifyPolicy& policy;
  const Checks& checks;
  const Datasets& datasets;
  std::filesystem::path work_dir;
  std::mutex& db_mutex;  // held while the database is used (never during the audit)
};

// Checks `s`, audits the run (structure and data) and records it as a new entry of `p`, then
// draws its challenges. Returns the entry as the API shows it, with its receipt. An Error says
// why the submission is refused (nothing is recorded then). A run whose audit fails is recorded,
// struck, with the first failing step and field.
nlohmann::json submit_entry(Db& db, const BlobStore& files, const std::vector<Track>& tracks,
                            const witness::SigningKey& board_key, const Participant& p,
                            const Submission& s, const Intake& intake);

// The entries of a track, newest first, and one entry by id.
std::vector<nlohmann::json> track_entries(Db& db, const std::string& track);
std::optional<nlohmann::json> entry_by_id(Db& db, const std::string& id);

}  // namespace wit::board
