// The board's verification queue (board/jobs.h) on both backends: challenges drawn after
// commit, leases, the cross-check of participants' reports, revocation of a worker that lied,
// strikes, the contribution rule, re-challenges and the signed certificate.
#include "board/jobs.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "board/ids.h"
#include "board/participants.h"
#include "core/error.h"
#include "tests/board/board_tables.h"
#include "tests/data/temp_dir.h"
#include "witness/verify/certificate.h"

namespace wit::board {
namespace {

using nlohmann::json;
using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

class JobsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      const char* url = std::getenv("WIT_TEST_POSTGRES_URL");
      if (!url || !*url) GTEST_SKIP() << "no PostgreSQL server (board.db_postgres starts one)";
      db_ = Db::open(url);
      testing::drop_board_tables(*db_);
    } else {
      db_ = Db::open((dir_.path() / "board.sqlite").string());
    }
    migrate(*db_);
    for (const char* name : {"alice", "bob", "carol", "mallory"}) {
      add_participant(*db_, name, false);
      ids_[name] = db_->query("SELECT id FROM board_participants WHERE name = $1", {std::string(name)})
                       .at(0)
                       .text(0);
    }
    policy_.challenges = 4;
    policy_.contribution = 1;
    policy_.spot_check = 0;  // participants check each other unless a test says otherwise
    policy_.lease_ms = 1000;
  }

  // An entry of `who` with `segments` segments of 10 steps whose audit passed (or not).
  std::string entry(const std::string& who, int64_t segments = 6, bool audit = true) {
    const std::string id = random_hex(8);
    db_->exec(
        "INSERT INTO board_entries (id, track, participant, name, head, steps, files, status, "
        "created, receipt) VALUES ($1, 'kjv-tiny', $2, $3, $4, $5, $6, 'verifying', $7, '{}')",
        {id, ids_.at(who), "run of " + who, std::string(64, 'a'), segments * 10,
         json({{"witness.h5", std::string(64, 'b')}}).dump(), utc_now()});
    EntryFacts f;
    f.certificate_fields = {{"genesis", std::string(64, '1')},
                            {"signed_head", {{"hash", std::string(64, '2')}, {"steps", segments * 10}}},
                            {"manifest_root", std::string(64, '3')},
                            {"data_layout", std::string(64, '4')},
                            {"trainer_key", std::string(64, '5')},
                            {"model_sha256", std::string(64, '6')},
                            {"final_state_hash", std::string(64, '7')}};
    f.steps = segments * 10;
    f.segment_steps = 10;
    f.segments = segments;
    f.val_loss = 2.5;
    f.params = 1000;
    f.tokens = 5000;
    JobQueue q = queue();
    q.record(id, f, {audit, audit ? "structure: fine; data: fine" : "data: step 7, field batch_hash", 0});
    q.schedule(id);
    return id;
  }
  JobQueue queue() { return JobQueue(*db_, policy_, key_); }
  std::string status(const std::string& e) {
    return db_->query("SELECT status FROM board_entries WHERE id = $1", {e}).at(0).text(0);
  }
  // Leases and reports every job `who` can get, passing all but the segments in `fail`.
  int drain(const std::string& who, std::set<int64_t> fail = {}, bool lie = false) {
    JobQueue q = queue();
    int n = 0;
    while (auto job = q.lease(who)) {
      bool passed = !fail.count(job->segment);
      if (lie) passed = !passed;
      q.report(job->id, who, who + "-host",
               {passed, passed ? "bit for bit" : fmt::format("step {}, field loss", job->first_step + 3), 0.5});
      ++n;
    }
    return n;
  }

  TempDir dir_;
  std::unique_ptr<Db> db_;
  std::map<std::string, std::string> ids_;
  VerifyPolicy policy_;
  witness::SigningKey key_ = witness::SigningKey::generate();
};

TEST_P(JobsTest, AnEntryIsChallengedOnItsFirstLastAndDrawnSegmentsAfterCommit) {
  const std::string e = entry("alice", 20);
  const auto draws = db_->query("SELECT segment, origin FROM board_draws WHERE entry = $1 ORDER BY n", {e});
  ASSERT_EQ(draws.size(), 6u);  // first and last, then 4 drawn
  EXPECT_EQ(draws[0].integer(0), 0);
  EXPECT_EQ(draws[1].integer(0), 19);
  for (size_t i = 2; i < 6; ++i) {
    EXPECT_EQ(draws[i].text(1), "drawn");
    EXPECT_GE(draws[i].integer(0), 1);  // drawn from the middle segments only
    EXPECT_LE(draws[i].integer(0), 18);
  }
  EXPECT_EQ(status(e), "verifying");
  // Scheduling again draws nothing more (a restart runs schedule_missing).
  queue().schedule(e);
  EXPECT_EQ(queue().schedule_missing(), 0);
  EXPECT_EQ(db_->query("SELECT COUNT(*) FROM board_draws WHERE entry = $1", {e})[0].integer(0), 6);
  // The board replays everything: certified, with a certificate its key signed.
  EXPECT_GE(drain(kBoardWorker), 3);
  EXPECT_EQ(status(e), "certified");
  const auto c = queue().certificate(e);
  ASSERT_TRUE(c);
  EXPECT_EQ(witness::check_certificate(*c, key_.public_key()), "");
  EXPECT_EQ((*c)["guarantee"]["challenges"], 4);
  EXPECT_EQ((*c)["challenge_source"]["kind"], "board");
  EXPECT_EQ((*c)["board"]["participant"], "alice");
  EXPECT_NE(witness::check_certificate(*c, witness::SigningKey::generate().public_key()), "");
  const json v = queue().verification(e);
  EXPECT_EQ(v["guarantee"]["challenges"], 4);
  EXPECT_NEAR(v["guarantee"]["f_rejected_with_99_percent"].get<double>(), 1 - std::pow(0.01, 0.25), 1e-12);
}

TEST_P(JobsTest, AFailedAuditOrSegmentStrikesTheEntryWithItsStepAndField) {
  const std::string bad_audit = entry("alice", 6, false);
  EXPECT_EQ(status(bad_audit), "struck");
  EXPECT_TRUE(contains(queue().verification(bad_audit)["failure"], "step 7, field batch_hash"));
  EXPECT_EQ(db_->query("SELECT COUNT(*) FROM board_jobs WHERE entry = $1", {bad_audit})[0].integer(0), 0);

  const std::string e = entry("bob");
  drain(kBoardWorker, {5});
  EXPECT_EQ(status(e), "struck");
  const json v = queue().verification(e);
  EXPECT_TRUE(contains(v["failure"], "segment 5 (steps 50 to 59): step 53, field loss")) << v["failure"];
  EXPECT_FALSE(queue().certificate(e));
  EXPECT_FALSE(v["ranked"]);
  // Struck: the replays nobody had leased yet are dropped, and it cannot be re-challenged.
  EXPECT_EQ(db_->query("SELECT COUNT(*) FROM board_jobs WHERE entry = $1 AND state = 'queued'", {e})[0].integer(0), 0);
  EXPECT_TRUE(contains(error_of([&] { queue().rechallenge(e, 1, ids_["carol"]); }), "struck already"));
}

TEST_P(JobsTest, ParticipantsNeverReplayTheirOwnEntriesAndTwoAgreeingReportsDecide) {
  policy_.pool_delay_ms = 60'000;  // the board's pool leaves the jobs to participants
  const std::string e = entry("alice", 2);
  EXPECT_FALSE(queue().lease(ids_["alice"]));
  const int bob = drain(ids_["bob"]);
  EXPECT_EQ(bob, 3);  // final, first, last (2 segments: none in the middle to draw)
  EXPECT_EQ(status(e), "verifying");
  EXPECT_EQ(drain(ids_["bob"]), 0);  // bob's own reports are checked by someone else
  EXPECT_EQ(drain(ids_["carol"]), 3);
  EXPECT_EQ(status(e), "certified");
  EXPECT_EQ(queue().contributions(ids_["bob"]), 3);
  EXPECT_EQ(queue().contributions(ids_["carol"]), 3);
  // Alice contributed nothing: certified, not ranked, until her workers replay others' segments.
  json v = queue().verification(e);
  EXPECT_FALSE(v["ranked"]);
  EXPECT_TRUE(contains(v["unranked_because"], "0 confirmed replay(s)"));
  const std::string other = entry("bob", 2);
  drain(ids_["alice"]);
  drain(ids_["carol"]);
  EXPECT_EQ(status(other), "certified");
  EXPECT_TRUE(queue().verification(e)["ranked"]);
  // The track listing's summaries, made in a few grouped queries, are each entry's own.
  const auto all = queue().summaries("kjv-tiny");
  EXPECT_EQ(all.size(), 2u);
  for (const auto& [id, v] : all) EXPECT_EQ(v, queue().verification(id, false)) << id;
}

TEST_P(JobsTest, AWorkerThatLiesIsCaughtRevokedAndItsPastReportsAreReplayedByTheBoard) {
  policy_.pool_delay_ms = 60'000;
  const std::string honest_run = entry("alice", 3);
  // mallory reports passes for alice's run, which bob confirms: decided by agreement.
  drain(ids_["mallory"]);
  drain(ids_["bob"]);
  EXPECT_EQ(status(honest_run), "certified");
  // A run whose segment 2 fails: mallory says it passed, carol that it failed.
  const std::string bad_run = entry("bob", 3);
  JobQueue q = queue();
  while (auto job = q.lease(ids_["mallory"])) q.report(job->id, ids_["mallory"], "m", {true, "bit for bit", 1});
  drain(ids_["carol"], {2});
  EXPECT_EQ(status(bad_run), "verifying");  // a disagreement: the board replays segment 2
  EXPECT_FALSE(q.lease(ids_["carol"]));     // the arbiter's job is the board's only
  // The board's replay: segment 2 of the bad run fails.
  const auto arbiter = q.lease(kBoardWorker);
  ASSERT_TRUE(arbiter);
  EXPECT_EQ(arbiter->entry, bad_run);
  EXPECT_EQ(arbiter->segment, 2);
  q.report(arbiter->id, kBoardWorker, "pool", {false, "step 23, field loss", 1});
  EXPECT_EQ(status(bad_run), "struck");
  EXPECT_TRUE(q.revoked(ids_["mallory"]));
  EXPECT_FALSE(q.revoked(ids_["carol"]));
  EXPECT_EQ(q.contributions(ids_["mallory"]), 0);
  EXPECT_FALSE(q.lease(ids_["mallory"]));
  // Mallory's reports on alice's run are void: the board replays those segments again.
  EXPECT_EQ(status(honest_run), "verifying");
  EXPECT_TRUE(contains(queue().verification(honest_run)["checks"][1]["detail"], "revoked"));
  drain(kBoardWorker);
  EXPECT_EQ(status(honest_run), "certified");
  // Bob's reports on alice's run were confirmed by the board itself.
  EXPECT_EQ(q.contributions(ids_["bob"]), 4);
  for (const auto& [id, v] : q.summaries("kjv-tiny")) EXPECT_EQ(v, q.verification(id, false)) << id;
}

TEST_P(JobsTest, ALeaseThatExpiresReturnsTheJobAndTheLateReportIsRefused) {
  policy_.pool_delay_ms = 60'000;
  const std::string e = entry("alice", 1);
  JobQueue q = queue();
  const auto job = q.lease(ids_["bob"]);
  ASSERT_TRUE(job);
  EXPECT_TRUE(q.renew(job->id, ids_["bob"]));
  EXPECT_FALSE(q.renew(job->id, ids_["carol"]));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::set<std::string> got;
  while (auto j = q.lease(ids_["mallory"])) got.insert(j->id);
  EXPECT_TRUE(got.count(job->id));  // bob's lease expired: the job went back to the queue
  EXPECT_TRUE(contains(error_of([&] { q.report(job->id, ids_["bob"], "b", {true, "", 1}); }),
                       "is not leased to you"));
  q.report(job->id, ids_["mallory"], "m", {true, "fine", 1});
  EXPECT_TRUE(contains(error_of([&] { q.report(job->id, ids_["mallory"], "m", {true, "", 1}); }),
                       "is not leased to you"));
  (void)e;
}

TEST_P(JobsTest, AReChallengeDrawsMoreSegmentsAndTightensTheGuarantee) {
  const std::string e = entry("alice", 20);
  drain(kBoardWorker);
  ASSERT_EQ(status(e), "certified");
  const auto first = queue().certificate(e);
  const auto drawn = queue().rechallenge(e, 6, ids_["carol"]);
  EXPECT_EQ(drawn.size(), 6u);
  drain(kBoardWorker);
  EXPECT_EQ(status(e), "certified");
  const json v = queue().verification(e);
  EXPECT_EQ(v["guarantee"]["challenges"], 10);
  const auto second = queue().certificate(e);
  EXPECT_EQ((*second)["guarantee"]["challenges"], 10);
  EXPECT_EQ((*first)["guarantee"]["challenges"], 4);
  EXPECT_EQ(v["draws"].back()["requested_by"], "carol");
  EXPECT_TRUE(contains(error_of([&] { queue().rechallenge(e, 0, ids_["carol"]); }), "1 to 1000"));
  const std::string tiny = entry("bob", 2);
  EXPECT_TRUE(contains(error_of([&] { queue().rechallenge(tiny, 1, ids_["carol"]); }), "all replayed already"));
}

TEST_P(JobsTest, TheBoardSpotChecksParticipantsWhenItsCoinSaysSo) {
  policy_.pool_delay_ms = 60'000;
  policy_.spot_check = 1;
  const std::string e = entry("alice", 1);
  drain(ids_["bob"]);
  EXPECT_EQ(drain(ids_["carol"]), 0);  // every check is the board's
  drain(kBoardWorker);
  EXPECT_EQ(status(e), "certified");
  EXPECT_EQ(queue().contributions(ids_["bob"]), 2);
}

TEST_P(JobsTest, NoParticipantHoardsJobsOrFloodsAnEntryWithReChallenges) {
  policy_.pool_delay_ms = 60'000;
  policy_.max_leases = 2;
  policy_.max_pending_draws = 10;
  const std::string e = entry("alice", 20);  // final, first, last and 4 drawn: up to 7 jobs
  JobQueue q = queue();
  EXPECT_TRUE(q.lease(ids_["bob"]));
  EXPECT_TRUE(q.lease(ids_["bob"]));
  EXPECT_FALSE(q.lease(ids_["bob"]));  // two held: no third
  EXPECT_TRUE(q.lease(ids_["carol"]));
  // 6 draws wait (first, last, 4 drawn): 4 more may be asked for, not 5.
  EXPECT_TRUE(contains(error_of([&] { q.rechallenge(e, 5, ids_["carol"]); }), "at most 10 may wait"));
  EXPECT_EQ(q.rechallenge(e, 4, ids_["carol"]).size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Backends, JobsTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wit::board
