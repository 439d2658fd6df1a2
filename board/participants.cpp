#include "board/participants.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "core/error.h"
#include "core/sha256.h"

namespace wit::board {

namespace {

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot draw random bytes from the system: {}", std::strerror(errno));
    got += size_t(n);
  }
  return to_hex(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
}

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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
            {random_hex(8), name, token_hash(token), int64_t(admin), now_utc()});
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
