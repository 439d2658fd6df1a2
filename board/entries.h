// Entries: a run submitted to a track. The board reads the run's witness log from its own file
// store (never the submitter's word), checks it whole (chains, signatures, schedules, complete),
// checks it against the track's rules and that every checkpoint the log commits to was
// uploaded, and records the entry with the log's signed head. Its receipt, signed with the
// board's key, binds the entry to that head: a later upload cannot swap the run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "board/blob_store.h"
#include "board/db.h"
#include "board/participants.h"
#include "board/track.h"
#include "witness/log/signing.h"

namespace wit::board {

struct Submission {
  std::string track, name;
  std::map<std::string, std::string> files;  // run file name -> SHA-256 (hex)
};

// Parses a submission's JSON; an Error names what is missing or malformed.
Submission parse_submission(const std::string& body);

// Checks `s` and records it as a new entry of `p`; returns the entry as the API shows it, with
// its receipt. An Error says why the submission is refused (nothing is recorded then).
nlohmann::json submit_entry(Db& db, const BlobStore& files, const std::vector<Track>& tracks,
                            const witness::SigningKey& board_key, const Participant& p,
                            const Submission& s);

// The entries of a track, newest first, and one entry by id.
std::vector<nlohmann::json> track_entries(Db& db, const std::string& track);
std::optional<nlohmann::json> entry_by_id(Db& db, const std::string& id);

}  // namespace wit::board
