// The board's verification queue (board/jobs.h) on both backends: challenges drawn after
// commit, leases, the cross-check of participants' reports, revocation of a worker that lied,
// strikes, the contribution rule, re-challenges and the signed certificate.
#include "board/jobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "board/ids.h"
#include "board/participants.h"
#include "core/error.h"
#include "core/sha256.h"
#include "tests/board/board_tables.h"
#include "tests/data/temp_dir.h"
#include "verify/certificate.h"

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

  // An entry of `who` with `segments` segments of `steps_each` steps whose audit passed (or not).
  std::string entry(const std::string& who, int64_t segments = 6, bool audit = true,
                    int64_t steps_each = 10, std::vector<int64_t> committed_inside = {}) {
    const std::string id = random_hex(8);
    db_->exec(
        "INSERT INTO board_entries (id, track, participant, name, head, steps, files, status, "
        "created, receipt) VALUES ($1, 'kjv-tiny', $2, $3, $4, $5, $6, 'verifying', $7, '{}')",
        {id, ids_.at(who), "run of " + who, std::string(64, 'a'), segments * steps_each,
         json({{"witness.h5", std::string(64, 'b')}}).dump(), utc_now()});
    EntryFacts f;
    f.certificate_fields = {{"genesis", std::string(64, '1')},
                            {"signed_head", {{"hash", std::string(64, '2')}, {"steps", segments * steps_each}}},
                            {"manifest_root", std::string(64, '3')},
                            {"data_layout", std::string(64, '4')},
                            {"trainer_key", std::string(64, '5')},
                            {"model_sha256", std::string(64, '6')},
                            {"final_state_hash", std::string(64, '7')}};
    f.steps = segments * steps_each;
    f.segment_steps = steps_each;
    f.segments = segments;
    f.val_loss = 2.5;
    f.params = 1000;
    f.tokens = 5000;
    f.committed_inside = std::move(committed_inside);
    JobQueue q = queue();
    q.record(id, f, {audit, audit ? "structure: fine; data: fine" : "data: step 7, field batch_hash", 0, ""});
    q.schedule(id);
    return id;
  }
  JobQueue queue() { return JobQueue(*db_, policy_, key_); }
  std::string status(const std::string& e) {
    return db_->query("SELECT status FROM board_entries WHERE id = $1", {e}).at(0).text(0);
  }
  // What a replay of the job finds: the state after its probe step stands for the state hash a
  // real replay computes (the same for every honest worker, and in no file).
  static ReplayResult truth(const Job& job, const std::set<int64_t>& fail) {
    if (fail.count(job.segment))
      return {false, fmt::format("step {}, field loss", job.first_step + 3), 0.5, ""};
    return {true, "bit for bit", 0.5,
            job.probe_step < 0 ? "" : to_hex(sha256(fmt::format("{}/{}/{}", job.entry, job.segment, job.probe_step)))};
  }
  // Leases and reports every job `who` can get, passing all but the segments in `fail` (or
  // the opposite of the truth, with made-up evidence, when `lie`).
  int drain(const std::string& who, std::set<int64_t> fail = {}, bool lie = false) {
    JobQueue q = queue();
    int n = 0;
    while (auto job = q.lease(who)) {
      ReplayResult r = truth(*job, fail);
      if (lie) r = {!r.passed, r.passed ? "step 1, field loss" : "bit for bit", 0.5, r.passed ? "" : std::string(64, 'f')};
      q.report(job->id, who, who + "-host", r);
      ++n;
    }
    return n;
  }
  int64_t distinct_draws(const std::string& e) {
    return db_->query("SELECT COUNT(DISTINCT segment) FROM board_draws WHERE entry = $1 AND origin = 'drawn'", {e})[0].integer(0);
  }
  std::string standing_of(const std::string& e, const std::string& who) {
    const auto r = db_->query("SELECT standing FROM board_reports WHERE entry = $1 AND reporter = $2", {e, ids_.at(who)});
    return r.empty() ? "" : r[0].text(0);
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
  policy_.pool_delay_ms = 60'000;  // the board's pool leaves the drawn segments to participants
  const std::string e = entry("alice", 6);
  const int64_t drawn = distinct_draws(e);
  EXPECT_FALSE(queue().lease(ids_["alice"]));
  // Only the drawn segments are participants' work: the first, the last and the final checks
  // are the board's own.
  EXPECT_EQ(drain(ids_["bob"]), drawn);
  EXPECT_EQ(drain(ids_["bob"]), 0);  // bob's own reports are checked by someone else
  EXPECT_EQ(drain(ids_["carol"]), drawn);
  EXPECT_EQ(status(e), "verifying");
  EXPECT_EQ(drain(kBoardWorker), 3);
  EXPECT_EQ(status(e), "certified");
  json v = queue().verification(e);
  for (const json& c : v["checks"]) {
    const int64_t k = c["segment"];
    EXPECT_EQ(c["decided_by"], k >= 1 && k <= 4 ? "agreement" : "board") << c;
  }
  // Agreement is not the board's confirmation: it counts for nobody's contribution, and with
  // the board's coin at 0 nothing bounds a run whose checkers all collude with it.
  EXPECT_EQ(queue().contributions(ids_["bob"]), 0);
  EXPECT_EQ(standing_of(e, "bob"), "agreed");
  EXPECT_TRUE(contains(v["guarantee"]["statement"], "which never reaches 99 %")) << v["guarantee"];
  EXPECT_EQ(v["guarantee"]["bounds"][4]["under_collusion"], 0.0);
  EXPECT_FALSE(v["ranked"]);
  // The certificate the board signs says who decided each check, in the board's own words:
  // a worker's text never enters it.
  const auto c = queue().certificate(e);
  ASSERT_TRUE(c);
  int agreed = 0;
  for (const json& k : (*c)["checks"])
    if (k["decided_by"] == "agreement") {
      ++agreed;
      EXPECT_EQ(k["detail"], "replayed by two participants' workers, which agreed on the verdict "
                             "and on the evidence");
    }
  EXPECT_EQ(agreed, drawn);
  const auto all = queue().summaries("kjv-tiny");
  for (const auto& [id, sv] : all) EXPECT_EQ(sv, queue().verification(id, false)) << id;
}

TEST_P(JobsTest, ContributionsCountOnlyReplaysTheBoardsOwnReplayConfirmed) {
  policy_.pool_delay_ms = 60'000;
  policy_.spot_check = 1;  // every draw's coin: the board replays every drawn segment itself
  const std::string e = entry("alice", 6);
  const int64_t drawn = distinct_draws(e);
  EXPECT_EQ(drain(ids_["bob"]), drawn);
  EXPECT_EQ(drain(ids_["carol"]), 0);  // every check is the board's
  drain(kBoardWorker);
  EXPECT_EQ(status(e), "certified");
  EXPECT_EQ(queue().contributions(ids_["bob"]), drawn);
  json v = queue().verification(e);
  EXPECT_TRUE(v["guarantee"]["every_step"] == (drawn == 4)) << v["guarantee"];
  // Alice contributed nothing: certified, not ranked, until her worker's replays are confirmed.
  EXPECT_FALSE(v["ranked"]);
  EXPECT_TRUE(contains(v["unranked_because"], "0 confirmed replay(s)"));
  // 18 middle segments and 4 draws: never every segment, so the certificate states a bound.
  const std::string other = entry("bob", 20);
  drain(ids_["alice"]);
  drain(kBoardWorker);
  EXPECT_EQ(status(other), "certified");
  EXPECT_TRUE(queue().verification(e)["ranked"]);
  // The certificate states the bound under collusion beside the plain one.
  const auto c = queue().certificate(other);
  ASSERT_TRUE(c);
  EXPECT_TRUE((*c)["guarantee"]["bounds"][0].contains("under_collusion"));
  EXPECT_TRUE(contains((*c)["guarantee"]["statement"], "whatever the number of participants colluding"));
  EXPECT_TRUE(contains(witness::certificate_strength(*c).summary, "if participants collude with the submitter"));
}

// A segment of one step has no state inside it, so its replay leaves no evidence that a worker
// which did not replay could not give: two workers' passes do not decide it, and the board's
// own pass confirms nobody's.
TEST_P(JobsTest, OneStepSegmentsAreDecidedByTheBoardAndEarnNoContribution) {
  policy_.pool_delay_ms = 60'000;
  const std::string e = entry("alice", 6, true, 1);
  const int64_t drawn = distinct_draws(e);
  EXPECT_EQ(drain(ids_["bob"]), drawn);  // passes without evidence: there is none to give
  EXPECT_EQ(drain(ids_["carol"]), 0);    // nothing to check: the board replays them
  EXPECT_EQ(status(e), "verifying");
  drain(kBoardWorker);
  EXPECT_EQ(status(e), "certified");
  for (const json& c : queue().verification(e)["checks"]) EXPECT_EQ(c["decided_by"], "board") << c;
  EXPECT_EQ(standing_of(e, "bob"), "unproven");
  EXPECT_EQ(queue().contributions(ids_["bob"]), 0);
}

// A state the log commits (an off-schedule checkpoint) has a public hash: a worker could copy it
// as evidence without replaying. Probes avoid such steps; a segment with none left is the
// board's to replay, and reports on it earn nothing.
TEST_P(JobsTest, ProbesAvoidStatesTheLogCommits) {
  policy_.pool_delay_ms = 60'000;
  std::vector<int64_t> all_but_5, all;
  for (int64_t s = 0; s < 6; ++s)
    for (int64_t k = 1; k < 10; ++k) {
      all.push_back(s * 10 + k);
      if (k != 5) all_but_5.push_back(s * 10 + k);
    }
  const std::string e = entry("alice", 6, true, 10, all_but_5);
  JobQueue q = queue();
  int leased = 0;
  while (auto job = q.lease(ids_["bob"])) {
    EXPECT_EQ(job->probe_step, job->first_step + 5) << job->segment;
    q.report(job->id, ids_["bob"], "bob-host", truth(*job, {}));
    ++leased;
  }
  EXPECT_GT(leased, 0);
  const std::string every = entry("alice", 6, true, 10, all);
  EXPECT_EQ(drain(ids_["carol"]), distinct_draws(every) + distinct_draws(e));
  for (const Row& r : db_->query("SELECT step FROM board_probes WHERE entry = $1", {every}))
    EXPECT_EQ(r.integer(0), -1);
  drain(kBoardWorker);
  EXPECT_EQ(status(every), "certified");
  EXPECT_EQ(standing_of(every, "carol"), "unproven");
}

TEST_P(JobsTest, AWorkerThatLiesIsCaughtRevokedAndItsPastReportsAreReplayedByTheBoard) {
  policy_.pool_delay_ms = 60'000;
  const std::string honest_run = entry("alice", 6);
  // mallory reports passes for alice's run, which bob confirms: decided by agreement.
  drain(ids_["mallory"]);
  drain(ids_["bob"]);
  drain(kBoardWorker);
  EXPECT_EQ(status(honest_run), "certified");
  // A run whose middle segments fail: mallory says they passed, carol that they failed.
  const std::string bad_run = entry("bob", 6);
  drain(ids_["mallory"], {1, 2, 3, 4}, true);
  drain(ids_["carol"], {1, 2, 3, 4});
  EXPECT_EQ(status(bad_run), "verifying");  // a disagreement: the board replays it
  EXPECT_FALSE(queue().lease(ids_["carol"]));  // the arbiter's job is the board's only
  JobQueue q = queue();
  // The board's replays: bad_run's middle segments fail; reopened segments of alice's pass.
  while (auto job = q.lease(kBoardWorker))
    q.report(job->id, kBoardWorker, "pool", truth(*job, job->entry == bad_run ? std::set<int64_t>{1, 2, 3, 4} : std::set<int64_t>{}));
  EXPECT_EQ(status(bad_run), "struck");
  EXPECT_TRUE(q.revoked(ids_["mallory"]));
  EXPECT_FALSE(q.revoked(ids_["carol"]));
  EXPECT_EQ(q.contributions(ids_["mallory"]), 0);
  EXPECT_FALSE(q.lease(ids_["mallory"]));
  // Mallory's reports on alice's run were voided and the board replayed those segments again.
  EXPECT_EQ(status(honest_run), "certified");
  EXPECT_EQ(standing_of(honest_run, "mallory"), "void");
  // The certificate issued on the strength of mallory's word is withdrawn ("revoked"); the one
  // issued after the board's own replays stands.
  const json list = q.status_list();
  ASSERT_EQ(list["withdrawn"].size(), 1u) << list;
  EXPECT_EQ(list["withdrawn"][0]["entry"], honest_run);
  EXPECT_EQ(list["withdrawn"][0]["status"], "revoked");
  EXPECT_TRUE(contains(list["withdrawn"][0]["reason"], "found wrong")) << list;
  const auto reissued = q.certificate(honest_run);
  ASSERT_TRUE(reissued);
  EXPECT_NE((*reissued)["id"], list["withdrawn"][0]["certificate"]);
  const witness::CertificateStatus st = witness::certificate_status(*reissued, list, key_.public_key());
  EXPECT_EQ(st.problem, "");
  EXPECT_TRUE(st.withdrawn.is_null());
  // Bob's and carol's passes were confirmed by the board itself. Carol's failures, which the
  // board found too, carry no evidence of a replay: they count for nothing (a colluder could
  // report failures on a junk entry of its partner's without replaying anything).
  EXPECT_EQ(q.contributions(ids_["bob"]), distinct_draws(honest_run));
  const int64_t failed_drawn =
      db_->query("SELECT COUNT(DISTINCT segment) FROM board_draws WHERE entry = $1 AND origin = "
                 "'drawn' AND segment BETWEEN 1 AND 4",
                 {bad_run})[0]
          .integer(0);
  ASSERT_GT(failed_drawn, 0);
  EXPECT_EQ(q.contributions(ids_["carol"]), distinct_draws(bad_run) - failed_drawn);
  EXPECT_FALSE(db_->query("SELECT 1 FROM board_reports WHERE entry = $1 AND reporter = $2 AND "
                          "passed = 0 AND standing = 'unproven'",
                          {bad_run, ids_["carol"]})
                   .empty());
  for (const auto& [id, v] : q.summaries("kjv-tiny")) EXPECT_EQ(v, q.verification(id, false)) << id;
}

TEST_P(JobsTest, AWorkerThatPassesWithoutReplayingIsCaughtByItsEvidence) {
  policy_.pool_delay_ms = 60'000;
  const std::string e = entry("alice", 6);
  // mallory is lazy: "passed", with a state hash it made up.
  JobQueue q = queue();
  while (auto job = q.lease(ids_["mallory"])) {
    EXPECT_GT(job->probe_step, job->first_step);  // a state inside the segment
    EXPECT_LT(job->probe_step, job->end_step);
    q.report(job->id, ids_["mallory"], "m", {true, "bit for bit", 0.1, to_hex(sha256(job->id))});
  }
  drain(ids_["bob"]);  // bob's evidence differs: the board replays
  EXPECT_EQ(status(e), "verifying");
  drain(kBoardWorker);
  EXPECT_EQ(status(e), "certified");
  EXPECT_TRUE(q.revoked(ids_["mallory"]));
  EXPECT_TRUE(contains(db_->query("SELECT reason FROM board_revoked WHERE participant = $1", {ids_["mallory"]})[0].text(0),
                       "did not replay it"));
  EXPECT_EQ(q.contributions(ids_["bob"]), distinct_draws(e));
  // A report with no evidence at all (a worker too old to give it) goes to the board and is
  // neither counted nor held against its worker.
  const std::string other = entry("bob", 6);
  while (auto job = q.lease(ids_["carol"])) q.report(job->id, ids_["carol"], "c", {true, "bit for bit", 0.1, ""});
  EXPECT_FALSE(q.lease(ids_["alice"]));  // nothing for a second opinion: the board replays
  drain(kBoardWorker);
  EXPECT_EQ(status(other), "certified");
  EXPECT_FALSE(q.revoked(ids_["carol"]));
  EXPECT_EQ(standing_of(other, "carol"), "unproven");
  EXPECT_EQ(q.contributions(ids_["carol"]), 0);
  EXPECT_TRUE(contains(error_of([&] {
                         const std::string third = entry("carol", 6);
                         auto job = q.lease(ids_["bob"]);
                         q.report(job->id, ids_["bob"], "b", {true, "", 0.1, "not hex"});
                       }),
                       "64 lowercase hex"));
}

TEST_P(JobsTest, ColludingWorkersCannotStrikeAnHonestEntry) {
  policy_.pool_delay_ms = 60'000;
  const std::string e = entry("alice", 6);
  drain(ids_["mallory"], {}, true);  // "failed"
  // A reported failure goes to the board's replay, not to a second participant who might be
  // the same person under another name.
  EXPECT_FALSE(queue().lease(ids_["carol"]));
  EXPECT_EQ(status(e), "verifying");
  drain(kBoardWorker);
  EXPECT_EQ(status(e), "certified");
  EXPECT_TRUE(queue().revoked(ids_["mallory"]));
}

// The board's bound under collusion, measured: the submitter controls two more identities whose
// workers lease every job they can and report its forged segments as passed with one made-up
// state hash (so they agree with each other); a lazy participant passes everything unreplayed;
// two honest ones replay. Over many entries the rate at which the forged run is certified
// stays within the bound the board states, (1 - p g)^c for a fraction g of bad segments.
TEST_P(JobsTest, AForgedRunIsCertifiedNoMoreOftenThanTheStatedBoundUnderCollusion) {
  policy_.pool_delay_ms = 60'000;
  policy_.spot_check = 0.5;
  policy_.challenges = 4;
  for (const char* name : {"mallory-2", "mallory-3", "dave"}) {
    add_participant(*db_, name, false);
    ids_[name] = db_->query("SELECT id FROM board_participants WHERE name = $1", {std::string(name)}).at(0).text(0);
  }
  const std::set<int64_t> bad = {1, 2, 3, 4};  // of 8 middle segments: g = 0.5
  const double g = 0.5, bound = std::pow(1 - policy_.spot_check * g, 4), honest_bound = std::pow(1 - g, 4);
  for (const bool colluders_first : {true, false}) {
    // WIT_COLLUSION_TRIALS raises the count for the figures in docs/board.md.
    const char* more = std::getenv("WIT_COLLUSION_TRIALS");
    // Fewer on PostgreSQL, where each transaction is a round trip: the logic is the same.
    const int trials = more ? std::max(1, std::atoi(more)) : GetParam() == "postgresql" ? 40 : 150;
    int certified = 0;
    std::mt19937 rng(colluders_first ? 1 : 2);
    for (int t = 0; t < trials; ++t) {
      for (const char* w : {"mallory-2", "mallory-3", "dave", "bob", "carol"}) queue().reinstate(ids_[w]);
      const std::string e = entry("mallory", 10);
      JobQueue q = queue();
      auto act = [&](const std::string& who) {
        auto job = q.lease(ids_.at(who));
        if (!job) return false;
        ReplayResult r = truth(*job, bad);
        if (who == "dave") r = {true, "bit for bit", 0.1, to_hex(sha256(job->id))};
        if (who.rfind("mallory", 0) == 0 && !r.passed)
          r = {true, "bit for bit", 0.1, to_hex(sha256(fmt::format("forged {} {}", job->segment, job->probe_step)))};
        q.report(job->id, ids_.at(who), who, r);
        return true;
      };
      std::vector<std::string> workers = {"mallory-2", "mallory-3", "dave", "bob", "carol"};
      for (int round = 0; round < 50 && status(e) == "verifying"; ++round) {
        if (!colluders_first) std::shuffle(workers.begin(), workers.end(), rng);
        bool any = false;
        for (const std::string& w : workers)
          while (act(w)) any = true;
        if (!any) drain(kBoardWorker, bad);
      }
      certified += status(e) == "certified";
      EXPECT_NE(status(e), "verifying");
    }
    const double rate = double(certified) / trials;
    const double sigma = std::sqrt(bound * (1 - bound) / trials);
    std::printf("collusion, %s: forged run certified in %d of %d trials (%.3f); stated bound %.3f "
                "under collusion, %.4f without\n",
                colluders_first ? "colluders lease first" : "workers in random order", certified,
                trials, rate, bound, honest_bound);
    EXPECT_LE(rate, bound + 4 * sigma);
  }
}

TEST_P(JobsTest, ALeaseThatExpiresReturnsTheJobAndTheLateReportIsRefused) {
  policy_.pool_delay_ms = 60'000;
  const std::string e = entry("alice", 3);  // segment 1, drawn 4 times: one job
  JobQueue q = queue();
  const auto job = q.lease(ids_["bob"]);
  ASSERT_TRUE(job);
  EXPECT_TRUE(q.renew(job->id, ids_["bob"]));
  EXPECT_FALSE(q.renew(job->id, ids_["carol"]));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::set<std::string> got;
  while (auto j = q.lease(ids_["mallory"])) got.insert(j->id);
  EXPECT_TRUE(got.count(job->id));  // bob's lease expired: the job went back to the queue
  EXPECT_TRUE(contains(error_of([&] { q.report(job->id, ids_["bob"], "b", {true, "", 1, ""}); }),
                       "is not leased to you"));
  q.report(job->id, ids_["mallory"], "m", truth(*job, {}));
  EXPECT_TRUE(contains(error_of([&] { q.report(job->id, ids_["mallory"], "m", {true, "", 1, ""}); }),
                       "is not leased to you"));
  (void)e;
}

// Renewing cannot keep a job for ever (an entry would never get its verdict), and identities
// passing a job between them by letting it lapse hand it to the board's pool after two leases.
TEST_P(JobsTest, RenewalsStopAtTheHoldLimitAndATwiceLapsedJobIsTheBoards) {
  policy_.pool_delay_ms = 60'000;  // the pool leaves open jobs to participants for a minute
  policy_.max_hold_ms = 1500;
  entry("alice", 3);  // segment 1, drawn 4 times: one job open to participants
  JobQueue q = queue();
  const auto job = q.lease(ids_["bob"]);
  ASSERT_TRUE(job);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_TRUE(q.renew(job->id, ids_["bob"]));  // now leased until the hold ends, at 1.5 s
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  EXPECT_FALSE(q.renew(job->id, ids_["bob"]));  // held 1.6 s: no more
  const auto second = q.lease(ids_["carol"]);   // back in the queue
  ASSERT_TRUE(second);
  EXPECT_EQ(second->id, job->id);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // carol lets it lapse too
  EXPECT_FALSE(q.lease(ids_["mallory"]));
  EXPECT_FALSE(q.lease(ids_["bob"]));
  std::set<std::string> pool;
  while (auto j = q.lease(kBoardWorker)) pool.insert(j->id);
  EXPECT_TRUE(pool.count(job->id));  // long before the pool delay
  EXPECT_TRUE(q.renew(job->id, kBoardWorker));
}

TEST_P(JobsTest, ACertificateWhoseEntryIsStruckLaterIsWithdrawnInTheSignedStatusList) {
  const std::string e = entry("alice", 20);
  const std::string other = entry("bob", 20);
  // Every middle segment not drawn yet fails when replayed: certified now, struck once a
  // re-challenge draws one of them.
  std::set<int64_t> undrawn;
  for (int64_t k = 1; k < 19; ++k) undrawn.insert(k);
  for (const Row& d : db_->query("SELECT segment FROM board_draws WHERE entry = $1", {e})) undrawn.erase(d.integer(0));
  JobQueue q = queue();
  while (auto job = q.lease(kBoardWorker)) q.report(job->id, kBoardWorker, "pool", truth(*job, job->entry == e ? undrawn : std::set<int64_t>{}));
  ASSERT_EQ(status(e), "certified");
  const auto issued = q.certificate(e), bystander = q.certificate(other);
  ASSERT_TRUE(issued && bystander);
  EXPECT_EQ((*issued)["id"].get<std::string>().size(), 32u);
  const json before = q.status_list();
  EXPECT_TRUE(before["withdrawn"].empty());
  EXPECT_TRUE(witness::certificate_status(*issued, before, key_.public_key()).withdrawn.is_null());
  for (int i = 0; i < 100 && status(e) == "certified"; ++i) {
    q.rechallenge(e, 1, ids_["carol"]);
    while (auto job = q.lease(kBoardWorker)) q.report(job->id, kBoardWorker, "pool", truth(*job, undrawn));
  }
  ASSERT_EQ(status(e), "struck");
  EXPECT_FALSE(q.certificate(e));
  // Every certificate the entry had (re-challenges that passed re-signed it) is withdrawn.
  const json list = q.status_list();
  ASSERT_GE(list["withdrawn"].size(), 1u) << list;
  for (const json& w : list["withdrawn"]) EXPECT_TRUE(w["entry"] == e && w["status"] == "struck") << w;
  const witness::CertificateStatus st = witness::certificate_status(*issued, list, key_.public_key());
  EXPECT_EQ(st.problem, "");
  ASSERT_FALSE(st.withdrawn.is_null());
  EXPECT_EQ(st.withdrawn["status"], "struck");
  EXPECT_TRUE(contains(st.withdrawn["reason"], "field loss")) << st.withdrawn;
  EXPECT_TRUE(witness::certificate_status(*bystander, list, key_.public_key()).withdrawn.is_null());
  // The list proves something only signed by the certificate's key, unchanged, and issued after
  // the certificate: an old list cannot hide a withdrawal.
  json changed = list;
  changed["withdrawn"] = json::array();
  EXPECT_TRUE(contains(witness::certificate_status(*issued, changed, key_.public_key()).problem, "signature does not match"));
  const witness::SigningKey other_key = witness::SigningKey::generate();
  EXPECT_TRUE(contains(witness::certificate_status(*issued, witness::sign_status_list({{"issued", list["issued"]}, {"withdrawn", json::array()}}, other_key),
                                                   key_.public_key()).problem,
                       "not signed by the certificate's verifier key"));
  const json old = witness::sign_status_list({{"issued", "2001-01-01T00:00:00Z"}, {"withdrawn", json::array()}}, key_);
  EXPECT_TRUE(contains(witness::certificate_status(*issued, old, key_.public_key()).problem, "before the certificate"));
  json no_id = *issued;
  no_id.erase("id");
  EXPECT_TRUE(contains(witness::certificate_status(no_id, list, key_.public_key()).problem, "has no id"));
}

TEST_P(JobsTest, AReChallengeDrawsMoreSegmentsAndTightensTheGuarantee) {
  const std::string e = entry("alice", 20);
  drain(kBoardWorker);
  ASSERT_EQ(status(e), "certified");
  const auto first = queue().certificate(e);
  const auto drawn = queue().rechallenge(e, 6, ids_["carol"]);
  EXPECT_EQ(drawn.size(), 6u);
  // While the new draws are replayed the entry stays certified (ranked if it was), its
  // certificate as issued: a rival's re-challenge cannot take it off the board.
  EXPECT_EQ(status(e), "certified");
  EXPECT_EQ(queue().certificate(e), first);
  EXPECT_TRUE(queue().verification(e)["certified"].get<bool>());
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

TEST_P(JobsTest, NoParticipantHoardsJobsOrFloodsAnEntryWithReChallenges) {
  policy_.pool_delay_ms = 60'000;
  policy_.max_leases = 2;
  policy_.max_pending_draws = 10;
  policy_.max_draws = 12;
  const std::string e = entry("alice", 200);  // 4 drawn segments, almost surely distinct
  JobQueue q = queue();
  EXPECT_TRUE(q.lease(ids_["bob"]));
  EXPECT_TRUE(q.lease(ids_["bob"]));
  EXPECT_FALSE(q.lease(ids_["bob"]));  // two held: no third
  EXPECT_TRUE(q.lease(ids_["carol"]));
  // An entry being verified is not re-challenged: draws would keep it from its verdict.
  EXPECT_TRUE(contains(error_of([&] { q.rechallenge(e, 1, ids_["carol"]); }), "still being verified"));
  // Once certified: 10 draws may wait, not 11; 6 were made (first, last, 4 drawn), so 12 more
  // in all, never 13, however many were decided.
  policy_.pool_delay_ms = 0;
  policy_.max_draws = 18;
  const std::string f = entry("bob", 200);
  drain(kBoardWorker);
  ASSERT_EQ(status(f), "certified");
  EXPECT_TRUE(contains(error_of([&] { queue().rechallenge(f, 11, ids_["carol"]); }), "at most 10 may wait"));
  EXPECT_EQ(queue().rechallenge(f, 10, ids_["carol"]).size(), 10u);
  drain(kBoardWorker);
  EXPECT_TRUE(contains(error_of([&] { queue().rechallenge(f, 3, ids_["carol"]); }),
                       "has 16 draws in all; at most 18 may be made"));
  EXPECT_EQ(queue().rechallenge(f, 2, ids_["carol"]).size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Backends, JobsTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wit::board
