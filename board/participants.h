// The board's participants and their tokens. A token is shown once, when it is made; the
// database keeps only its SHA-256, so a copy of the database lets no one act as a participant.
// Admin tokens are separate participants marked admin.
//
//   migrate(db);
//   const std::string token = add_participant(db, "lab-a", false);  // "wit_" + 64 hex digits
//   std::optional<Participant> p = participant_for_token(db, token);
#pragma once

#include <optional>
#include <string>

#include "board/db.h"

namespace wit::board {

// Creates the board's tables where they are missing (both backends; safe to run again).
void migrate(Db& db);
void migrate_entries(Db& db);  // board/entries.cpp; part of migrate

struct Participant {
  std::string id;  // 16 hex digits
  std::string name;
  bool admin = false;
};

// Adds a participant named `name` (1 to 64 of letters, digits, space, '.', '_', '-'; unique) and
// returns its new token.
std::string add_participant(Db& db, const std::string& name, bool admin);
// The participant a token belongs to; nullopt for an unknown or malformed token.
std::optional<Participant> participant_for_token(Db& db, const std::string& token);

}  // namespace wit::board
