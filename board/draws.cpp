// What the board replays of an entry, drawn from its own randomness after the entry is committed
// (board/jobs.h): the segments challenged at submission and by re-challenges, each draw's
// hidden coin for the board's own replay, and the step inside a segment whose state a replay
// shows as evidence.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "board/ids.h"
#include "board/jobs.h"
#include "core/error.h"
#include "verify/challenges.h"

namespace wit::board {

void JobQueue::draw(const std::string& entry, int64_t c, const std::string& origin,
                    const std::string& by, std::vector<int64_t>* drawn) {
  const auto res = db_.query(
      "SELECT segments, segment_steps, steps FROM board_results WHERE entry = $1", {entry});
  if (res.empty()) fail("no entry '{}'", entry);
  const int64_t segments = res[0].integer(0), K = res[0].integer(1), steps = res[0].integer(2);
  int64_t n = db_.query("SELECT COUNT(*) FROM board_draws WHERE entry = $1", {entry})[0].integer(0);
  // The key is read now, after the entry was committed: nothing the trainer sent can steer it.
  for (uint64_t s : witness::draw_segments(random_key(), c, uint64_t(segments))) {
    const int64_t seg = int64_t(s);
    // Each draw's own coin: a segment drawn twice is the board's if either draw says so, so c
    // draws all miss the board's replay of a bad segment with probability (1 - p f)^c.
    const bool board = random_unit() < policy_.spot_check;
    db_.exec(
        "INSERT INTO board_draws (entry, n, segment, origin, requested_by, created) VALUES ($1, $2, "
        "$3, $4, $5, $6)",
        {entry, n, seg, origin, by, utc_now()});
    db_.exec("INSERT INTO board_draw_coins (entry, n, board, p) VALUES ($1, $2, $3, $4)",
             {entry, n, int64_t(board), policy_.spot_check});
    ++n;
    if (drawn) drawn->push_back(seg);
    const auto had = db_.query(
        "SELECT status, decided_by FROM board_segments WHERE entry = $1 AND segment = $2",
        {entry, seg});
    if (had.empty()) {
      db_.exec(
          "INSERT INTO board_segments (entry, segment, first_step, end_step, status, detail, "
          "decided_by) VALUES ($1, $2, $3, $4, 'pending', '', '')",
          {entry, seg, seg * K, std::min(steps, (seg + 1) * K)});
      queue_job(entry, seg, "replay", "");
    } else if (board && had[0].text(0) == "passed" && had[0].text(1) != kBoardWorker) {
      // Decided by participants' agreement before; this draw's coin wants the board's replay.
      db_.exec(
          "UPDATE board_segments SET status = 'pending', detail = 'drawn again: the board replays "
          "it', decided_by = '' WHERE entry = $1 AND segment = $2",
          {entry, seg});
      queue_board_job(entry, seg);
    }
  }
}

void JobQueue::schedule(const std::string& entry) {
  db_.transaction([&] {
    const auto r = db_.query(
        "SELECT r.scheduled, s.status FROM board_results r JOIN board_segments s ON s.entry = "
        "r.entry AND s.segment = $2 WHERE r.entry = $1",
        {entry, kAuditSegment});
    if (r.empty() || r[0].integer(0) != 0) return;
    if (r[0].text(1) == "passed") draw(entry, policy_.challenges, "drawn", kBoardWorker, nullptr);
    db_.exec("UPDATE board_results SET scheduled = 1 WHERE entry = $1", {entry});
    refresh(entry);
  });
}

std::vector<int64_t> JobQueue::rechallenge(const std::string& entry, int64_t c,
                                           const std::string& by) {
  if (c < 1 || c > 1000) fail("a re-challenge draws 1 to 1000 segments, not {}", c);
  std::vector<int64_t> drawn;
  db_.transaction([&] {
    drawn.clear();
    const auto r = db_.query(
        "SELECT r.segments, s.status FROM board_results r JOIN board_segments s ON s.entry = "
        "r.entry AND s.segment = $2 WHERE r.entry = $1",
        {entry, kAuditSegment});
    if (r.empty()) fail("no entry '{}'", entry);
    if (r[0].text(1) != "passed") fail("entry {} failed its audit: nothing to re-challenge", entry);
    const std::string status =
        db_.query("SELECT status FROM board_entries WHERE id = $1", {entry}).at(0).text(0);
    if (status == "struck") fail("entry {} is struck already: nothing to re-challenge", entry);
    if (r[0].integer(0) <= 2)
      fail("entry {} has {} segment(s), all replayed already", entry, r[0].integer(0));
    // Draws on an entry not yet certified would keep it from its verdict: anyone with a token
    // could hold a rival's entry off the board by re-challenging it as it is verified.
    if (status != "certified")
      fail("entry {} is still being verified: it may be re-challenged once it is certified", entry);
    const int64_t drawn_before =
        db_.query("SELECT COUNT(*) FROM board_draws WHERE entry = $1", {entry})[0].integer(0);
    if (drawn_before + c > policy_.max_draws)
      fail("entry {} has {} draws in all; at most {} may be made", entry, drawn_before,
           policy_.max_draws);
    const int64_t pending =
        db_.query("SELECT COUNT(*) FROM board_draws d JOIN board_segments s ON s.entry = d.entry "
                  "AND s.segment = d.segment WHERE d.entry = $1 AND s.status = 'pending'",
                  {entry})[0]
            .integer(0);
    if (pending + c > policy_.max_pending_draws)
      fail("entry {} has {} draws waiting to be replayed; at most {} may wait: ask again later",
           entry, pending, policy_.max_pending_draws);
    draw(entry, c, "rechallenge", by, &drawn);
    refresh(entry);
  });
  return drawn;
}

bool JobQueue::board_coin(const std::string& entry, int64_t segment) {
  if (segment < 0) return true;
  return !db_.query("SELECT 1 FROM board_draws d JOIN board_draw_coins c ON c.entry = d.entry AND "
                    "c.n = d.n WHERE d.entry = $1 AND d.segment = $2 AND c.board = 1",
                    {entry, segment})
              .empty();
}

int64_t JobQueue::probe_step(const std::string& entry, int64_t segment, int64_t first,
                             int64_t end) {
  const auto had =
      db_.query("SELECT step FROM board_probes WHERE entry = $1 AND segment = $2", {entry, segment});
  if (!had.empty()) return had[0].integer(0);
  // A state strictly inside the segment (its checkpoints hold the first and the last) whose
  // hash the log does not commit: a worker that did not replay could copy that one. None left
  // (a log that commits every step): -1, and the board replays the segment itself.
  std::set<int64_t> committed;
  for (const Row& r : db_.query("SELECT step FROM board_committed_states WHERE entry = $1 AND step "
                                "> $2 AND step < $3",
                                {entry, first, end}))
    committed.insert(r.integer(0));
  const int64_t free = std::max<int64_t>(0, end - first - 1 - int64_t(committed.size()));
  int64_t step = -1;
  if (free > 0) {
    int64_t k = std::min(free - 1, int64_t(random_unit() * double(free)));
    for (step = first + 1;; ++step)
      if (!committed.count(step) && k-- == 0) break;
  }
  db_.exec("INSERT INTO board_probes (entry, segment, step) VALUES ($1, $2, $3)",
           {entry, segment, step});
  return step;
}

}  // namespace wit::board
