#include "board/jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "board/ids.h"
#include "core/error.h"
#include "verify/certificate.h"
#include "verify/challenges.h"

namespace wit::board {

using nlohmann::json;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string check_label(int64_t segment, int64_t first, int64_t end) {
  if (segment == kAuditSegment) return "structure and data audit";
  if (segment == kFinalSegment) return "final model and evaluation";
  return fmt::format("segment {} (steps {} to {})", segment, first, end - 1);
}

json job_json(const Job& j) {
  return {{"id", j.id},
          {"entry", j.entry},
          {"role", j.role},
          {"segment", j.segment},
          {"first_step", j.first_step},
          {"end_step", j.end_step},
          {"files", j.files},
          {"sizes", j.sizes},
          {"manifest_root", j.manifest_root},
          {"data_layout", j.data_layout},
          {"lease_expires_ms", j.lease_expires_ms},
          {"probe_step", j.probe_step}};
}

Job job_from_json(const json& j) {
  try {
    Job out;
    out.id = j.at("id");
    out.entry = j.at("entry");
    out.role = j.at("role");
    out.segment = j.at("segment");
    out.first_step = j.at("first_step");
    out.end_step = j.at("end_step");
    out.files = j.at("files").get<std::map<std::string, std::string>>();
    out.sizes = j.at("sizes").get<std::map<std::string, uint64_t>>();
    out.manifest_root = j.at("manifest_root");
    out.data_layout = j.at("data_layout");
    out.lease_expires_ms = j.at("lease_expires_ms");
    out.probe_step = j.value("probe_step", int64_t(-1));
    // Ids become paths on a worker's disk: hex only, whatever a board sends.
    for (const std::string* id : {&out.id, &out.entry})
      if (id->empty() || id->size() > 64 || id->find_first_not_of("0123456789abcdef") != std::string::npos)
        fail("a job from the board has a malformed id '{}'", *id);
    return out;
  } catch (const json::exception& e) {
    fail("a malformed job from the board: {}", e.what());
  }
}

void migrate_jobs(Db& db) {
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_results ("
      " entry TEXT PRIMARY KEY REFERENCES board_entries(id),"
      " facts TEXT NOT NULL,"
      " steps BIGINT NOT NULL, segment_steps BIGINT NOT NULL, segments BIGINT NOT NULL,"
      " val_loss DOUBLE PRECISION NOT NULL, params BIGINT NOT NULL, tokens BIGINT NOT NULL,"
      " scheduled BIGINT NOT NULL,"
      " detail TEXT NOT NULL,"
      " certificate TEXT NOT NULL)");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_segments ("
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " segment BIGINT NOT NULL,"
      " first_step BIGINT NOT NULL, end_step BIGINT NOT NULL,"
      " status TEXT NOT NULL,"
      " detail TEXT NOT NULL,"
      " decided_by TEXT NOT NULL,"
      " PRIMARY KEY (entry, segment))");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_draws ("
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " n BIGINT NOT NULL,"
      " segment BIGINT NOT NULL,"
      " origin TEXT NOT NULL,"
      " requested_by TEXT NOT NULL,"
      " created TEXT NOT NULL,"
      " PRIMARY KEY (entry, n))");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_jobs ("
      " id TEXT PRIMARY KEY,"
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " segment BIGINT NOT NULL,"
      " role TEXT NOT NULL,"
      " exclude TEXT NOT NULL,"
      " state TEXT NOT NULL,"
      " owner TEXT NOT NULL,"
      " lease_expires BIGINT NOT NULL,"
      " created_ms BIGINT NOT NULL,"
      " attempts BIGINT NOT NULL)");
  db.exec("CREATE INDEX IF NOT EXISTS board_jobs_state ON board_jobs (state, created_ms)");
  // When each job's current lease began (a table of its own: board_jobs of older boards lack
  // the column), which bounds how long renewals may keep it.
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_job_holds ("
      " job TEXT PRIMARY KEY REFERENCES board_jobs(id),"
      " leased_ms BIGINT NOT NULL)");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_reports ("
      " job TEXT PRIMARY KEY REFERENCES board_jobs(id),"
      " entry TEXT NOT NULL,"
      " segment BIGINT NOT NULL,"
      " reporter TEXT NOT NULL,"
      " worker TEXT NOT NULL,"
      " passed BIGINT NOT NULL,"
      " detail TEXT NOT NULL,"
      " seconds DOUBLE PRECISION NOT NULL,"
      " standing TEXT NOT NULL,"
      " created TEXT NOT NULL,"
      " created_ms BIGINT NOT NULL)");
  // Never shown while an entry verifies: each draw's coin (1: the board replays the segment
  // itself), the step whose state is a segment's evidence, and the evidence each report gave.
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_draw_coins ("
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " n BIGINT NOT NULL,"
      " board BIGINT NOT NULL,"
      " p DOUBLE PRECISION NOT NULL,"
      " PRIMARY KEY (entry, n))");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_committed_states ("
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " step BIGINT NOT NULL,"
      " PRIMARY KEY (entry, step))");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_probes ("
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " segment BIGINT NOT NULL,"
      " step BIGINT NOT NULL,"
      " PRIMARY KEY (entry, segment))");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_evidence ("
      " job TEXT PRIMARY KEY REFERENCES board_jobs(id),"
      " evidence TEXT NOT NULL)");
  // Every certificate issued, and its withdrawal (empty while it stands).
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_certificates ("
      " id TEXT PRIMARY KEY,"
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " issued TEXT NOT NULL,"
      " withdrawn TEXT NOT NULL,"
      " status TEXT NOT NULL,"
      " reason TEXT NOT NULL)");
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_revoked ("
      " participant TEXT PRIMARY KEY,"
      " reason TEXT NOT NULL,"
      " created TEXT NOT NULL)");
}

JobQueue::JobQueue(Db& db, VerifyPolicy policy, const witness::SigningKey& key)
    : db_(db), policy_(policy), key_(key) {
  if (policy_.challenges < 0 || policy_.challenges > 10000)
    fail("challenges {}: expected 0 to 10000", policy_.challenges);
  if (policy_.contribution < 0) fail("contribution {}: expected >= 0", policy_.contribution);
  if (!(policy_.spot_check >= 0 && policy_.spot_check <= 1))
    fail("spot check probability {}: expected 0 to 1", policy_.spot_check);
  if (policy_.lease_ms < 1000) fail("a lease of {} ms is too short: at least 1000", policy_.lease_ms);
  if (policy_.max_hold_ms < policy_.lease_ms)
    fail("a job may be held {} ms in all, less than one lease of {} ms", policy_.max_hold_ms,
         policy_.lease_ms);
  if (policy_.participant_attempts < 1)
    fail("participant attempts {}: expected at least 1", policy_.participant_attempts);
}

void JobQueue::queue_job(const std::string& entry, int64_t segment, const std::string& role,
                         const std::string& exclude) {
  db_.exec(
      "INSERT INTO board_jobs (id, entry, segment, role, exclude, state, owner, lease_expires, "
      "created_ms, attempts) VALUES ($1, $2, $3, $4, $5, 'queued', '', 0, $6, 0)",
      {random_hex(8), entry, segment, role, exclude, now_ms()});
}

void JobQueue::record(const std::string& entry, const EntryFacts& f, const ReplayResult& audit) {
  db_.exec(
      "INSERT INTO board_results (entry, facts, steps, segment_steps, segments, val_loss, params, "
      "tokens, scheduled, detail, certificate) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, '', '')",
      {entry, f.certificate_fields.dump(), f.steps, f.segment_steps, f.segments, f.val_loss,
       f.params, f.tokens});
  auto add_segment = [&](int64_t s, int64_t first, int64_t end, const std::string& status,
                         const std::string& detail, const std::string& by) {
    db_.exec(
        "INSERT INTO board_segments (entry, segment, first_step, end_step, status, detail, "
        "decided_by) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        {entry, s, first, end, status, detail, by});
  };
  for (int64_t step : std::set<int64_t>(f.committed_inside.begin(), f.committed_inside.end()))
    db_.exec("INSERT INTO board_committed_states (entry, step) VALUES ($1, $2)", {entry, step});
  add_segment(kAuditSegment, 0, f.steps, audit.passed ? "passed" : "failed", audit.detail,
              kBoardWorker);
  if (audit.passed) {
    // The segments replayed whatever the draws, by the board itself: the final checks, the
    // first and the last (no participant, whoever it is, decides them).
    add_segment(kFinalSegment, f.steps, f.steps, "pending", "", "");
    queue_job(entry, kFinalSegment, "board", "");
    for (int64_t s : std::set<int64_t>{0, f.segments - 1}) {
      add_segment(s, s * f.segment_steps, std::min(f.steps, (s + 1) * f.segment_steps), "pending",
                  "", "");
      queue_job(entry, s, "board", "");
      const int64_t n = s == 0 ? 0 : 1;
      db_.exec(
          "INSERT INTO board_draws (entry, n, segment, origin, requested_by, created) VALUES ($1, "
          "$2, $3, 'always', $4, $5)",
          {entry, n, s, std::string(kBoardWorker), utc_now()});
      db_.exec("INSERT INTO board_draw_coins (entry, n, board, p) VALUES ($1, $2, 1, 1.0)",
               {entry, n});
    }
  }
  refresh(entry);
}

bool JobQueue::revoked(const std::string& participant) {
  return !db_.query("SELECT 1 FROM board_revoked WHERE participant = $1", {participant}).empty();
}

bool JobQueue::reinstate(const std::string& participant) {
  bool was = false;
  db_.transaction([&] {
    was = db_.exec("DELETE FROM board_revoked WHERE participant = $1", {participant}) == 1;
  });
  return was;
}

std::optional<Job> JobQueue::lease(const std::string& who) {
  const bool board = who == kBoardWorker;
  std::optional<Job> out;
  db_.transaction([&] {
    out.reset();
    if (!board && revoked(who)) return;
    const int64_t now = now_ms();
    // A participant cannot sit on more than a few jobs: the rest stay for other workers.
    if (!board && db_.query("SELECT COUNT(*) FROM board_jobs WHERE owner = $1 AND state = 'leased' "
                            "AND lease_expires >= $2",
                            {who, now})[0]
                          .integer(0) >= policy_.max_leases)
      return;
    const auto rows = db_.query(
        "SELECT j.id, j.entry, j.segment, j.role, j.exclude, j.created_ms, e.participant, "
        "j.attempts "
        "FROM board_jobs j JOIN board_entries e ON e.id = j.entry "
        "WHERE j.state = 'queued' OR (j.state = 'leased' AND j.lease_expires < $1) "
        "ORDER BY j.created_ms, j.id",
        {now});
    std::set<std::pair<std::string, int64_t>> reported;
    if (!board)
      for (const Row& r : db_.query(
               "SELECT entry, segment FROM board_reports WHERE reporter = $1 AND standing <> 'void'",
               {who}))
        reported.insert({r.text(0), r.integer(1)});
    const Row* pick = nullptr;
    std::vector<const Row*> eligible;
    for (const Row& r : rows) {
      const std::string& role = r.text(3);
      if (board) {
        // The board's own jobs first; open ones once participants had their time.
        if (role == "board") {
          pick = &r;
          break;
        }
        const bool lapsed = r.integer(7) >= policy_.participant_attempts;
        if (!pick && (lapsed || r.integer(5) <= now - policy_.pool_delay_ms)) pick = &r;
      } else if (role != "board" && r.text(6) != who && r.text(4) != who &&
                 r.integer(7) < policy_.participant_attempts &&
                 !reported.count({r.text(1), r.integer(2)})) {
        eligible.push_back(&r);
      }
    }
    // A participant gets one of the jobs open to it at random, not the one it would time its
    // request for.
    if (!eligible.empty())
      pick = eligible[std::min(eligible.size() - 1, size_t(random_unit() * double(eligible.size())))];
    if (!pick) return;
    const int64_t expires = now + policy_.lease_ms;
    if (db_.exec("UPDATE board_jobs SET state = 'leased', owner = $2, lease_expires = $3, "
                 "attempts = attempts + 1 WHERE id = $1 AND (state = 'queued' OR (state = "
                 "'leased' AND lease_expires < $4))",
                 {pick->text(0), who, expires, now}) != 1)
      return;
    db_.exec("DELETE FROM board_job_holds WHERE job = $1", {pick->text(0)});
    db_.exec("INSERT INTO board_job_holds (job, leased_ms) VALUES ($1, $2)", {pick->text(0), now});
    Job j;
    j.id = pick->text(0);
    j.entry = pick->text(1);
    j.segment = pick->integer(2);
    j.role = pick->text(3);
    j.lease_expires_ms = expires;
    const auto seg = db_.query(
        "SELECT first_step, end_step FROM board_segments WHERE entry = $1 AND segment = $2",
        {j.entry, j.segment});
    j.first_step = seg.at(0).integer(0);
    j.end_step = seg.at(0).integer(1);
    if (j.segment >= 0) j.probe_step = probe_step(j.entry, j.segment, j.first_step, j.end_step);
    const auto e = db_.query(
        "SELECT e.files, r.facts FROM board_entries e JOIN board_results r ON r.entry = e.id "
        "WHERE e.id = $1",
        {j.entry});
    j.files = json::parse(e.at(0).text(0)).get<std::map<std::string, std::string>>();
    const json facts = json::parse(e.at(0).text(1));
    j.manifest_root = facts.at("manifest_root");
    j.data_layout = facts.at("data_layout");
    out = j;
  });
  return out;
}

bool JobQueue::renew(const std::string& job, const std::string& who) {
  bool held = false;
  db_.transaction([&] {
    const int64_t now = now_ms();
    int64_t until = now + policy_.lease_ms;
    if (who != kBoardWorker) {
      const auto since = db_.query("SELECT leased_ms FROM board_job_holds WHERE job = $1", {job});
      const int64_t end = since.empty() ? now : since[0].integer(0) + policy_.max_hold_ms;
      if (now >= end) {
        held = false;
        return;
      }
      until = std::min(until, end);
    }
    held = db_.exec("UPDATE board_jobs SET lease_expires = $3 WHERE id = $1 AND owner = $2 AND "
                    "state = 'leased'",
                    {job, who, until}) == 1;
  });
  return held;
}

void JobQueue::report(const std::string& job, const std::string& who, const std::string& worker,
                      const ReplayResult& r) {
  if (worker.size() > 200) fail("the worker's name is over 200 characters");
  if (r.detail.size() > 4000) fail("the report's detail is over 4000 characters");
  if (!(r.seconds >= 0 && std::isfinite(r.seconds))) fail("the report's seconds must be >= 0");
  if (!r.evidence.empty() && (r.evidence.size() != 64 ||
                              r.evidence.find_first_not_of("0123456789abcdef") != std::string::npos))
    fail("the report's evidence must be 64 lowercase hex digits (a state hash) or absent");
  db_.transaction([&] {
    const auto rows =
        db_.query("SELECT entry, segment, state, owner FROM board_jobs WHERE id = $1", {job});
    if (rows.empty()) fail("no job '{}'", job);
    if (rows[0].text(2) != "leased" || rows[0].text(3) != who)
      fail("job {} is not leased to you: its lease expired and another worker took it, or it was "
           "reported already",
           job);
    if (who != kBoardWorker && revoked(who)) fail("your worker standing was revoked");
    const std::string entry = rows[0].text(0);
    const int64_t segment = rows[0].integer(1);
    db_.exec(
        "INSERT INTO board_reports (job, entry, segment, reporter, worker, passed, detail, "
        "seconds, standing, created, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'open', "
        "$9, $10)",
        {job, entry, segment, who, worker, int64_t(r.passed), r.detail, r.seconds, utc_now(),
         now_ms()});
    if (!r.evidence.empty())
      db_.exec("INSERT INTO board_evidence (job, evidence) VALUES ($1, $2)", {job, r.evidence});
    db_.exec("UPDATE board_jobs SET state = 'done' WHERE id = $1", {job});
    decide(entry, segment);
    refresh(entry);
  });
}

void JobQueue::queue_board_job(const std::string& entry, int64_t segment) {
  if (db_.query("SELECT 1 FROM board_jobs WHERE entry = $1 AND segment = $2 AND role = 'board' "
                "AND state <> 'done'",
                {entry, segment})
          .empty())
    queue_job(entry, segment, "board", "");
}

void JobQueue::decide(const std::string& entry, int64_t segment) {
  struct Rep {
    std::string job, reporter;
    bool passed;
    std::string detail, standing, evidence;
  };
  std::vector<Rep> reps;
  for (const Row& r : db_.query(
           "SELECT r.job, r.reporter, r.passed, r.detail, r.standing, COALESCE(v.evidence, '') "
           "FROM board_reports r LEFT JOIN board_evidence v ON v.job = r.job WHERE r.entry = $1 "
           "AND r.segment = $2 AND r.standing <> 'void' ORDER BY r.created_ms, r.job",
           {entry, segment}))
    reps.push_back({r.text(0), r.text(1), r.integer(2) != 0, r.text(3), r.text(4), r.text(5)});
  const auto probe =
      db_.query("SELECT step FROM board_probes WHERE entry = $1 AND segment = $2", {entry, segment});
  const int64_t probe_at = probe.empty() ? -1 : probe[0].integer(0);
  auto set_segment = [&](const std::string& status, const std::string& detail,
                         const std::string& by) {
    db_.exec("UPDATE board_segments SET status = $3, detail = $4, decided_by = $5 WHERE entry = $1 "
             "AND segment = $2",
             {entry, segment, status, detail, by});
  };
  auto standing = [&](const Rep& r, const std::string& s) {
    db_.exec("UPDATE board_reports SET standing = $2 WHERE job = $1", {r.job, s});
  };
  auto job_pending = [&] {
    return db_
               .query("SELECT COUNT(*) FROM board_jobs WHERE entry = $1 AND segment = $2 AND "
                      "state <> 'done'",
                      {entry, segment})[0]
               .integer(0) > 0;
  };
  const Rep* board = nullptr;
  for (const Rep& r : reps)
    if (r.reporter == kBoardWorker) board = &r;
  if (board) {
    // The board's own replay decides. A participant that gave another verdict, or a pass with
    // other evidence than the state the replay reached, is revoked; a pass with no evidence
    // (a worker too old to give it) is neither counted nor held against it.
    set_segment(board->passed ? "passed" : "failed", board->detail, kBoardWorker);
    const bool compare = board->passed && probe_at >= 0 && !board->evidence.empty();
    for (const Rep& r : reps) {
      if (r.reporter == kBoardWorker || r.standing == "wrong") continue;
      const std::string what = check_label(segment, 0, 0);
      if (r.passed != board->passed) {
        standing(r, "wrong");
        revoke(r.reporter, fmt::format("reported {} for {} of entry {}, which the board's replay {}",
                                       r.passed ? "a pass" : "a failure", what, entry,
                                       board->passed ? "passed" : "failed"));
      } else if (!r.passed || (compare && r.evidence.empty()) || (board->passed && probe_at < 0)) {
        // A failure the board found too carries no evidence (a junk entry fails everywhere, so
        // a colluder could report failures without replaying); no evidence, or a segment of one
        // step, whose replay leaves none a worker that did not replay could not give: a report
        // that proves no work earns no contribution.
        standing(r, "unproven");
      } else if (compare && r.evidence != board->evidence) {
        standing(r, "wrong");
        revoke(r.reporter,
               fmt::format("reported a pass for {} of entry {} with evidence that is not the state "
                           "after step {} the board's replay reached: it did not replay it",
                           what, entry, probe_at));
      } else {
        standing(r, "confirmed");
      }
    }
    return;
  }
  std::vector<const Rep*> distinct;
  std::set<std::string> seen;
  for (const Rep& r : reps)
    if (r.standing != "wrong" && seen.insert(r.reporter).second) distinct.push_back(&r);
  if (distinct.empty()) return;
  auto to_board = [&](const std::string& why) {
    set_segment("pending", why, "");
    queue_board_job(entry, segment);
  };
  // Only the board strikes: a reported failure, however many agree, is replayed by the board,
  // so colluding workers cannot strike an honest entry.
  for (const Rep* r : distinct)
    if (!r->passed) return to_board("a worker reported a failure: the board replays it");
  if (probe_at < 0)
    return to_board(
        "a segment of one step has no state inside it to show a replay: the board replays it");
  for (const Rep* r : distinct)
    if (probe_at >= 0 && r->evidence.empty())
      return to_board("a report came without evidence of its replay: the board replays it");
  if (board_coin(entry, segment)) {
    if (!job_pending()) queue_board_job(entry, segment);
    return;
  }
  if (distinct.size() >= 2) {
    const Rep &a = *distinct[0], &b = *distinct[1];
    if (a.evidence != b.evidence) return to_board("two workers disagree: the board replays it");
    standing(a, "agreed");
    standing(b, "agreed");
    // The board's words, not a worker's: the detail goes into certificates the board signs.
    set_segment("passed",
                "replayed by two participants' workers, which agreed on the verdict and on the "
                "evidence",
                "agreement");
  } else if (!job_pending()) {
    // One participant's word: checked by another participant's worker.
    queue_job(entry, segment, "check", distinct[0]->reporter);
  }
}

void JobQueue::revoke(const std::string& participant, const std::string& reason) {
  if (revoked(participant)) return;
  db_.exec("INSERT INTO board_revoked (participant, reason, created) VALUES ($1, $2, $3)",
           {participant, reason, utc_now()});
  // Every report it made is void, and every segment it helped decide without the board is
  // replayed again by the board.
  std::set<std::string> entries;
  for (const Row& r : db_.query(
           "SELECT job, entry, segment FROM board_reports WHERE reporter = $1 AND standing IN "
           "('open', 'confirmed', 'agreed', 'unproven')",
           {participant})) {
    db_.exec("UPDATE board_reports SET standing = 'void' WHERE job = $1", {r.text(0)});
    const std::string entry = r.text(1);
    const int64_t segment = r.integer(2);
    const auto seg = db_.query(
        "SELECT decided_by FROM board_segments WHERE entry = $1 AND segment = $2", {entry, segment});
    if (!seg.empty() && seg[0].text(0) == kBoardWorker) continue;
    db_.exec(
        "UPDATE board_segments SET status = 'pending', detail = 'a worker that reported on it was "
        "revoked: the board replays it', decided_by = '' WHERE entry = $1 AND segment = $2",
        {entry, segment});
    db_.exec(
        "UPDATE board_reports SET standing = 'open' WHERE entry = $1 AND segment = $2 AND "
        "standing = 'agreed'",
        {entry, segment});
    queue_board_job(entry, segment);
    if (entries.insert(entry).second)
      withdraw_certificates(entry, "revoked",
                            fmt::format("a participant's report it relied on was found wrong ({}): "
                                        "the board replays segment {} itself",
                                        reason, segment));
  }
  for (const std::string& e : entries) refresh(e);
}

bool JobQueue::standing_certificate(const std::string& id) {
  return !db_.query("SELECT 1 FROM board_certificates WHERE id = $1 AND withdrawn = ''", {id})
              .empty();
}

void JobQueue::withdraw_certificates(const std::string& entry, const std::string& status,
                                     const std::string& reason) {
  db_.exec("UPDATE board_certificates SET withdrawn = $2, status = $3, reason = $4 WHERE entry = "
           "$1 AND withdrawn = ''",
           {entry, utc_now(), status, reason});
}

nlohmann::json JobQueue::status_list() {
  nlohmann::json withdrawn = nlohmann::json::array();
  for (const Row& r : db_.query("SELECT id, entry, status, reason, withdrawn, issued FROM "
                                "board_certificates WHERE withdrawn <> '' ORDER BY withdrawn, id"))
    withdrawn.push_back({{"certificate", r.text(0)},
                         {"entry", r.text(1)},
                         {"status", r.text(2)},
                         {"reason", r.text(3)},
                         {"withdrawn", r.text(4)},
                         {"issued", r.text(5)}});
  return witness::sign_status_list({{"issued", utc_now()}, {"withdrawn", withdrawn}}, key_);
}

int64_t JobQueue::contributions(const std::string& participant) {
  if (revoked(participant)) return 0;
  return db_
      .query("SELECT COUNT(*) FROM board_reports r JOIN board_entries e ON e.id = r.entry WHERE "
             "r.reporter = $1 AND r.standing = 'confirmed' AND e.participant <> $1",
             {participant})[0]
      .integer(0);
}

int JobQueue::schedule_missing() {
  int n = 0;
  for (const Row& r : db_.query("SELECT entry FROM board_results WHERE scheduled = 0", {})) {
    schedule(r.text(0));
    ++n;
  }
  return n;
}

}  // namespace wit::board
