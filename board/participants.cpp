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

}  // namespace wit::board
