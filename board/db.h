// The board's database: one small SQL interface over SQLite (the embedded default, WAL mode)
// and PostgreSQL (for several board servers sharing one database).
//
// Statements use PostgreSQL's placeholders, $1, $2, ...; values are null, 64-bit integers,
// doubles or text (hashes are stored as hex text, so no backend-specific blob type is needed).
// Write SQL both accept: TEXT, BIGINT, DOUBLE PRECISION, no autoincrement (ids are made by the
// board), ON CONFLICT for upserts.
//
//   auto db = Db::open("board.sqlite");                     // or "postgresql://host/db"
//   db->exec("INSERT INTO t (k, v) VALUES ($1, $2)", {"a", int64_t(1)});
//   for (const Row& r : db->query("SELECT k, v FROM t WHERE v > $1", {int64_t(0)})) r.text(0);
//   db->transaction([&] { ... });                           // all or nothing
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace wit::board {

using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;

struct Row {
  std::vector<SqlValue> values;
  bool is_null(size_t i) const;
  // Each throws an Error naming the column when the value is null or of another type.
  int64_t integer(size_t i) const;
  double real(size_t i) const;
  const std::string& text(size_t i) const;
};

class Db {
 public:
  // A path (or "sqlite:PATH") opens or creates an SQLite database in WAL mode; a
  // "postgresql://..." or "postgres://..." URL connects to PostgreSQL.
  static std::unique_ptr<Db> open(const std::string& where);
  virtual ~Db() = default;

  virtual std::string backend() const = 0;  // "sqlite" or "postgresql"
  // Runs one statement; returns the rows it changed. Errors name the statement and the cause.
  virtual int64_t exec(const std::string& sql, const std::vector<SqlValue>& params = {}) = 0;
  virtual std::vector<Row> query(const std::string& sql,
                                 const std::vector<SqlValue>& params = {}) = 0;
  // Runs `body` in one transaction: committed when it returns, rolled back when it throws (the
  // exception goes on). A conflict with a concurrent transaction (PostgreSQL serialization
  // failure, SQLite busy) retries the body, a few times, after a short wait.
  void transaction(const std::function<void()>& body);
};

}  // namespace wit::board
