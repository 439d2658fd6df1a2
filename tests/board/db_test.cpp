// The board's database layer against both backends: SQLite (always) and PostgreSQL (when
// WIT_TEST_POSTGRES_URL names a server: tests/board/with_postgres.sh starts one on loopback).
#include "board/db.h"
#include "board/participants.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <thread>

#include "core/error.h"
#include "tests/board/board_tables.h"
#include "tests/data/temp_dir.h"

namespace wit::board {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

class DbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      const char* url = std::getenv("WIT_TEST_POSTGRES_URL");
      if (!url || !*url) GTEST_SKIP() << "no PostgreSQL server (board.db_postgres starts one)";
      where_ = url;
    } else {
      where_ = (dir_.path() / "board.sqlite").string();
    }
    db_ = Db::open(where_);
    // Each test its own table, so runs against one PostgreSQL database do not meet.
    table_ = std::string("t_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : table_) c = std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '_';
    db_->exec("DROP TABLE IF EXISTS " + table_);
    db_->exec("CREATE TABLE " + table_ +
              " (k TEXT PRIMARY KEY, i BIGINT, r DOUBLE PRECISION, n TEXT)");
  }
  TempDir dir_;
  std::string where_, table_;
  std::unique_ptr<Db> db_;
};

TEST_P(DbTest, EveryTypeRoundTrips) {
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  const std::string text = "it's \"quoted\", $1 and ünïcödé 日本";
  EXPECT_EQ(db_->exec("INSERT INTO " + table_ + " (k, i, r, n) VALUES ($1, $2, $3, $4)",
                      {std::string("a"), big, 0.1, text}),
            1);
  db_->exec("INSERT INTO " + table_ + " (k, i, r, n) VALUES ($1, $2, $3, $4)",
            {std::string("b"), small, -1e300, SqlValue{}});
  const auto rows = db_->query("SELECT k, i, r, n FROM " + table_ + " ORDER BY k");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].text(0), "a");
  EXPECT_EQ(rows[0].integer(1), big);
  EXPECT_EQ(rows[0].real(2), 0.1);
  EXPECT_EQ(rows[0].text(3), text);
  EXPECT_EQ(rows[1].integer(1), small);
  EXPECT_EQ(rows[1].real(2), -1e300);
  EXPECT_TRUE(rows[1].is_null(3));
  // A literal '$1' inside a string is text, not a placeholder.
  EXPECT_EQ(db_->query("SELECT '$1' || $1", {std::string("x")})[0].text(0), "$1x");
  EXPECT_TRUE(contains(error_of([&] { rows[0].integer(0); }), "column 0 is text, not an integer"));
  EXPECT_TRUE(contains(error_of([&] { rows[1].text(3); }), "column 3 is null, not text"));
}

TEST_P(DbTest, UpsertsCountTheRowsTheyChange) {
  const std::string upsert = "INSERT INTO " + table_ +
                             " (k, i) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET i = excluded.i";
  EXPECT_EQ(db_->exec(upsert, {std::string("a"), int64_t(1)}), 1);
  EXPECT_EQ(db_->exec(upsert, {std::string("a"), int64_t(2)}), 1);
  EXPECT_EQ(db_->query("SELECT i FROM " + table_ + " WHERE k = $1", {std::string("a")})[0].integer(0), 2);
  EXPECT_EQ(db_->exec("UPDATE " + table_ + " SET i = 3 WHERE k = $1", {std::string("none")}), 0);
}

TEST_P(DbTest, ATransactionIsAllOrNothing) {
  db_->transaction([&] { db_->exec("INSERT INTO " + table_ + " (k) VALUES ('kept')"); });
  EXPECT_THROW(db_->transaction([&] {
    db_->exec("INSERT INTO " + table_ + " (k) VALUES ('lost')");
    fail("the body fails");
  }),
               Error);
  const auto rows = db_->query("SELECT k FROM " + table_ + " ORDER BY k");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].text(0), "kept");
  // A constraint violation inside a transaction rolls it back too.
  EXPECT_THROW(db_->transaction([&] {
    db_->exec("INSERT INTO " + table_ + " (k) VALUES ('new')");
    db_->exec("INSERT INTO " + table_ + " (k) VALUES ('kept')");
  }),
               Error);
  EXPECT_EQ(db_->query("SELECT k FROM " + table_)[0].text(0), "kept");
  EXPECT_EQ(db_->query("SELECT k FROM " + table_).size(), 1u);
}

TEST_P(DbTest, ErrorsNameTheStatementAndTheBackend) {
  const std::string e = error_of([&] { db_->exec("SELEC nonsense FROM " + table_); });
  EXPECT_TRUE(contains(e, GetParam() == "sqlite" ? "SQLite" : "PostgreSQL")) << e;
  EXPECT_TRUE(contains(e, "SELEC nonsense")) << e;
}

TEST_P(DbTest, ConcurrentReadModifyWritesFromTwoConnectionsLoseNothing) {
  db_->exec("INSERT INTO " + table_ + " (k, i) VALUES ('counter', 0)");
  auto writer = [&] {
    auto db = Db::open(where_);
    for (int n = 0; n < 40; ++n)
      db->transaction([&] {
        const int64_t v =
            db->query("SELECT i FROM " + table_ + " WHERE k = 'counter'")[0].integer(0);
        db->exec("UPDATE " + table_ + " SET i = $1 WHERE k = 'counter'", {v + 1});
      });
  };
  std::thread a(writer), b(writer);
  a.join();
  b.join();
  EXPECT_EQ(db_->query("SELECT i FROM " + table_ + " WHERE k = 'counter'")[0].integer(0), 80);
}

TEST_P(DbTest, ParticipantsAreFoundByTokenWhichIsStoredOnlyHashed) {
  testing::drop_board_tables(*db_);
  migrate(*db_);
  migrate(*db_);  // again: nothing changes
  const std::string a = add_participant(*db_, "lab-a", false);
  const std::string admin = add_participant(*db_, "operator", true);
  EXPECT_EQ(a.size(), 68u);
  EXPECT_NE(a, admin);
  const auto pa = participant_for_token(*db_, a);
  ASSERT_TRUE(pa);
  EXPECT_EQ(pa->name, "lab-a");
  EXPECT_FALSE(pa->admin);
  EXPECT_TRUE(participant_for_token(*db_, admin)->admin);
  std::string forged = a;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_FALSE(participant_for_token(*db_, forged));
  EXPECT_FALSE(participant_for_token(*db_, "wit_short"));
  EXPECT_FALSE(participant_for_token(*db_, ""));
  for (const Row& r : db_->query("SELECT id, name, token_sha256, created FROM board_participants"))
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.text(i).find(a.substr(4)), std::string::npos);
  EXPECT_TRUE(contains(error_of([&] { add_participant(*db_, "lab-a", false); }),
                       "a participant named 'lab-a' exists already"));
  EXPECT_TRUE(contains(error_of([&] { add_participant(*db_, "../evil", false); }),
                       "participant name '../evil'"));
  testing::drop_board_tables(*db_);
}

INSTANTIATE_TEST_SUITE_P(Backends, DbTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

TEST(Db, AnUnreachableServerOrBadPathIsNamed) {
  EXPECT_TRUE(contains(error_of([] { Db::open("postgresql://nobody:secret@127.0.0.1:1/none"); }),
                       "cannot connect to PostgreSQL at postgresql://nobody:***@127.0.0.1:1/none"));
  EXPECT_TRUE(contains(error_of([] { Db::open("/nonexistent-dir/board.sqlite"); }),
                       "cannot open SQLite database /nonexistent-dir/board.sqlite"));
}

}  // namespace
}  // namespace wit::board
