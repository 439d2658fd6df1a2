#include "board/participants.h"

#include "board/ids.h"
#include "board/jobs.h"
#include "core/error.h"
#include "core/sha256.h"

namespace wit::board {

namespace {

std::string token_hash(const std::string& token) { return to_hex(sha256(token)); }

}  // namespace

void migrate(Db& db) {
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_participants ("
      " id TEXT PRIMARY KEY,"
      " name TEXT NOT NULL UNIQUE,"
      " token_sha256 TEXT NOT NULL UNIQUE,"
      " admin BIGINT NOT NULL,"
      " created TEXT NOT NULL)");
  // Uploads begun and not finished, by participant (the per-participant quota).
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_uploads ("
      " sha256 TEXT NOT NULL,"
      " participant TEXT NOT NULL,"
      " size BIGINT NOT NULL,"
      " began TEXT NOT NULL,"
      " PRIMARY KEY (sha256, participant))");
  // Trainer keys a participant proved it holds (hex of the raw Ed25519 key).
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_trainer_keys ("
      " participant TEXT NOT NULL,"
      " trainer_key TEXT NOT NULL,"
      " created TEXT NOT NULL,"
      " PRIMARY KEY (participant, trainer_key))");
  migrate_entries(db);
  migrate_jobs(db);
}

std::string add_participant(Db& db, const std::string& name, bool admin) {
  if (name.empty() || name.size() > 64 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._-") !=
          std::string::npos)
    fail("participant name '{}': use 1 to 64 letters, digits, spaces, '.', '_' or '-'", name);
  const std::string token = "wit_" + random_hex(32);
  std::string problem;
  db.transaction([&] {
    if (!db.query("SELECT id FROM board_participants WHERE name = $1", {name}).empty()) {
      problem = name;
      return;
    }
    db.exec("INSERT INTO board_participants (id, name, token_sha256, admin, created) "
            "VALUES ($1, $2, $3, $4, $5)",
            {random_hex(8), name, token_hash(token), int64_t(admin), utc_now()});
  });
  if (!problem.empty()) fail("a participant named '{}' exists already", problem);
  return token;
}

std::optional<Participant> participant_for_token(Db& db, const std::string& token) {
  if (token.size() != 68 || token.rfind("wit_", 0) != 0 ||
      token.find_first_not_of("0123456789abcdef", 4) != std::string::npos)
    return std::nullopt;
  const auto rows = db.query("SELECT id, name, admin FROM board_participants WHERE token_sha256 = $1",
                             {token_hash(token)});
  if (rows.empty()) return std::nullopt;
  return Participant{rows[0].text(0), rows[0].text(1), rows[0].integer(2) != 0};
}

std::string trainer_key_claim(const witness::PublicKey& board_key, const std::string& participant_id) {
  return "wit-board-trainer-key-v1 board " + to_hex(board_key.data(), board_key.size()) +
         " participant " + participant_id;
}

void register_trainer_key(Db& db, const witness::PublicKey& board_key, const Participant& p,
                          const witness::PublicKey& key, const witness::Signature& proof) {
  if (!witness::verify_signature(key, trainer_key_claim(board_key, p.id), proof))
    fail("the proof is not trainer key {}'s signature of this board's claim for participant {} "
         "(wit board register-key makes it with the private key)",
         witness::key_id(key), p.name);
  const std::string hex = to_hex(key.data(), key.size());
  db.exec("INSERT INTO board_trainer_keys (participant, trainer_key, created) VALUES ($1, $2, $3) "
          "ON CONFLICT (participant, trainer_key) DO NOTHING",
          {p.id, hex, utc_now()});
}

bool has_trainer_key(Db& db, const std::string& participant_id, const witness::PublicKey& key) {
  return !db.query("SELECT 1 FROM board_trainer_keys WHERE participant = $1 AND trainer_key = $2",
                   {participant_id, to_hex(key.data(), key.size())})
              .empty();
}

std::vector<std::string> trainer_keys(Db& db, const std::string& participant_id) {
  std::vector<std::string> out;
  for (const Row& r : db.query("SELECT trainer_key FROM board_trainer_keys WHERE participant = $1 "
                               "ORDER BY created, trainer_key",
                               {participant_id}))
    out.push_back(r.text(0));
  return out;
}

}  // namespace wit::board
