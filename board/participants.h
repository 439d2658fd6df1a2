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
#include <vector>

#include "board/db.h"
#include "record/signing.h"

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

// Trainer keys. An entry's log must be signed by a key its participant registered, and
// registering takes the key's signature over trainer_key_claim(board key, participant id): a
// participant holding only another's public key (which every published log names) cannot.
std::string trainer_key_claim(const witness::PublicKey& board_key, const std::string& participant_id);
// Registers `key` for `p` once `proof` checks; registering it again is harmless. An Error says why
// the proof does not check.
void register_trainer_key(Db& db, const witness::PublicKey& board_key, const Participant& p,
                          const witness::PublicKey& key, const witness::Signature& proof);
bool has_trainer_key(Db& db, const std::string& participant_id, const witness::PublicKey& key);
std::vector<std::string> trainer_keys(Db& db, const std::string& participant_id);  // hex, oldest first

}  // namespace wit::board
