#include "board/db.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/error.h"

namespace wit::board {

namespace {

const char* type_name(const SqlValue& v) {
  switch (v.index()) {
    case 0: return "null";
    case 1: return "an integer";
    case 2: return "a real";
    default: return "text";
  }
}

std::string short_sql(const std::string& sql) {
  std::string s;
  for (char c : sql) s += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
  while (s.find("  ") != std::string::npos) s.replace(s.find("  "), 2, " ");
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

// A conflict the transaction retries: thrown by the backends, caught in Db::transaction.
struct Conflict : Error {
  using Error::Error;
};

// ---------------------------------------------------------------------------------------------
// SQLite

// $N -> ?N outside quoted strings: SQLite binds ?N by index.
std::string sqlite_placeholders(const std::string& sql) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '$' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      out += '?';
      continue;
    }
    out += c;
  }
  return out;
}

class Sqlite final : public Db {
 public:
  explicit Sqlite(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      fail("cannot open SQLite database {}: {}", path, why);
    }
    sqlite3_busy_timeout(db_, 5000);
    // WAL: readers never wait for the writer; FULL: a committed transaction survives a crash.
    const auto mode = query("PRAGMA journal_mode=WAL", {});
    if (mode.empty() || mode[0].text(0) != "wal")
      fail("{}: SQLite would not use write-ahead logging", path);
    exec("PRAGMA synchronous=FULL", {});
    exec("PRAGMA foreign_keys=ON", {});
  }
  ~Sqlite() override { sqlite3_close(db_); }
  std::string backend() const override { return "sqlite"; }

  int64_t exec(const std::string& sql, const std::vector<SqlValue>& params) override {
    run(sql, params, nullptr);
    return sqlite3_changes64(db_);
  }
  std::vector<Row> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    std::vector<Row> rows;
    run(sql, params, &rows);
    return rows;
  }

 private:
  void run(const std::string& sql, const std::vector<SqlValue>& params, std::vector<Row>* rows) {
    sqlite3_stmt* st = nullptr;
    const std::string translated = sqlite_placeholders(sql);
    if (sqlite3_prepare_v2(db_, translated.c_str(), int(translated.size()), &st, nullptr) != SQLITE_OK)
      fail("SQLite {}: {}: {}", path_, sqlite3_errmsg(db_), short_sql(sql));
    struct Finalize {
      sqlite3_stmt* s;
      ~Finalize() { sqlite3_finalize(s); }
    } finalize{st};
    for (size_t i = 0; i < params.size(); ++i) {
      const int k = int(i + 1);
      const SqlValue& v = params[i];
      int rc = SQLITE_OK;
      if (std::holds_alternative<std::monostate>(v)) rc = sqlite3_bind_null(st, k);
      else if (auto p = std::get_if<int64_t>(&v)) rc = sqlite3_bind_int64(st, k, *p);
      else if (auto d = std::get_if<double>(&v)) rc = sqlite3_bind_double(st, k, *d);
      else {
        const auto& s = std::get<std::string>(v);
        rc = sqlite3_bind_text64(st, k, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      }
      if (rc != SQLITE_OK) fail("SQLite {}: binding ${}: {}: {}", path_, k, sqlite3_errmsg(db_), short_sql(sql));
    }
    for (;;) {
      const int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) return;
      if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        throw Conflict(fmt::format("SQLite {}: busy: {}", path_, short_sql(sql)));
      if (rc != SQLITE_ROW) fail("SQLite {}: {}: {}", path_, sqlite3_errmsg(db_), short_sql(sql));
      if (!rows) continue;
      Row r;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        switch (sqlite3_column_type(st, c)) {
          case SQLITE_NULL: r.values.emplace_back(); break;
          case SQLITE_INTEGER: r.values.emplace_back(int64_t(sqlite3_column_int64(st, c))); break;
          case SQLITE_FLOAT: r.values.emplace_back(sqlite3_column_double(st, c)); break;
          default: {
            const auto* p = static_cast<const char*>(sqlite3_column_blob(st, c));
            r.values.emplace_back(std::string(p ? p : "", size_t(sqlite3_column_bytes(st, c))));
          }
        }
      }
      rows->push_back(std::move(r));
    }
  }

  std::string path_;
  sqlite3* db_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// PostgreSQL

class Postgres final : public Db {
 public:
  explicit Postgres(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string why = PQerrorMessage(conn_);
      PQfinish(conn_);
      while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
      fail("cannot connect to PostgreSQL at {}: {}", redacted(url), why);
    }
    exec("SET client_min_messages = warning", {});
  }
  ~Postgres() override { PQfinish(conn_); }
  std::string backend() const override { return "postgresql"; }

  int64_t exec(const std::string& sql, const std::vector<SqlValue>& params) override {
    Result r = run(sql, params);
    const char* n = PQcmdTuples(r.get());
    return n && *n ? std::strtoll(n, nullptr, 10) : 0;
  }
  std::vector<Row> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    Result res = run(sql, params);
    PGresult* r = res.get();
    std::vector<Row> rows(size_t(PQntuples(r)));
    for (int i = 0; i < PQntuples(r); ++i)
      for (int c = 0; c < PQnfields(r); ++c) {
        auto& out = rows[size_t(i)].values;
        if (PQgetisnull(r, i, c)) {
          out.emplace_back();
          continue;
        }
        const char* v = PQgetvalue(r, i, c);
        switch (PQftype(r, c)) {
          case 20: case 21: case 23: out.emplace_back(int64_t(std::strtoll(v, nullptr, 10))); break;
          case 700: case 701: case 1700: out.emplace_back(std::strtod(v, nullptr)); break;
          default: out.emplace_back(std::string(v, size_t(PQgetlength(r, i, c))));
        }
      }
    return rows;
  }

 private:
  struct Clear {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  using Result = std::unique_ptr<PGresult, Clear>;

  static std::string redacted(const std::string& url) {  // no password in messages
    const size_t at = url.find('@'), scheme = url.find("://");
    if (at == std::string::npos || scheme == std::string::npos) return url;
    const size_t colon = url.find(':', scheme + 3);
    return colon != std::string::npos && colon < at ? url.substr(0, colon) + ":***" + url.substr(at) : url;
  }

  Result run(const std::string& sql, const std::vector<SqlValue>& params) {
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      const SqlValue& v = params[i];
      if (std::holds_alternative<std::monostate>(v)) continue;
      if (auto p = std::get_if<int64_t>(&v)) text[i] = std::to_string(*p);
      else if (auto d = std::get_if<double>(&v)) text[i] = fmt::format("{:.17g}", *d);
      else text[i] = std::get<std::string>(v);
      values[i] = text[i].c_str();
    }
    Result r(PQexecParams(conn_, sql.c_str(), int(params.size()), nullptr, values.data(), nullptr,
                          nullptr, 0));
    const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
    const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    std::string why = r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_);
    while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
    const std::string msg = fmt::format("PostgreSQL: {}: {}", why, short_sql(sql));
    // 40001 serialization failure, 40P01 deadlock: the transaction may be retried.
    if (state && (std::string(state) == "40001" || std::string(state) == "40P01")) throw Conflict(msg);
    fail("{}", msg);
  }

  PGconn* conn_;
};

}  // namespace

bool Row::is_null(size_t i) const { return std::holds_alternative<std::monostate>(values.at(i)); }

int64_t Row::integer(size_t i) const {
  if (auto p = std::get_if<int64_t>(&values.at(i))) return *p;
  fail("column {} is {}, not an integer", i, type_name(values[i]));
}

double Row::real(size_t i) const {
  if (auto p = std::get_if<double>(&values.at(i))) return *p;
  if (auto p = std::get_if<int64_t>(&values.at(i))) return double(*p);
  fail("column {} is {}, not a real", i, type_name(values[i]));
}

const std::string& Row::text(size_t i) const {
  if (auto p = std::get_if<std::string>(&values.at(i))) return *p;
  fail("column {} is {}, not text", i, type_name(values[i]));
}

std::unique_ptr<Db> Db::open(const std::string& where) {
  if (where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0)
    return std::make_unique<Postgres>(where);
  const std::string path = where.rfind("sqlite:", 0) == 0 ? where.substr(7) : where;
  if (path.empty()) fail("no database given (a file for SQLite, or postgresql://...)");
  return std::make_unique<Sqlite>(path);
}

void Db::transaction(const std::function<void()>& body) {
  const bool sqlite = backend() == "sqlite";
  for (int attempt = 1;; ++attempt) {
    try {
      // SQLite: take the write lock up front, so two writers never deadlock on an upgrade.
      exec(sqlite ? "BEGIN IMMEDIATE" : "BEGIN ISOLATION LEVEL SERIALIZABLE");
    } catch (const Conflict& c) {
      if (attempt >= 10) throw Error(c.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
      continue;
    }
    try {
      body();
      exec("COMMIT");
      return;
    } catch (const Conflict& c) {
      try { exec("ROLLBACK"); } catch (const Error&) {}
      if (attempt >= 10) throw Error(c.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    } catch (...) {
      try { exec("ROLLBACK"); } catch (const Error&) {}
      throw;
    }
  }
}

}  // namespace wit::board
