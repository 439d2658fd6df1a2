// An entry's verdict from its checks (board/jobs.h): its status and first failure, its
// guarantee, its certificate, and the views of it the pages and the API show.
#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <set>

#include "board/ids.h"
#include "board/jobs.h"
#include "core/error.h"
#include "verify/certificate.h"
#include "verify/challenges.h"

namespace wit::board {

using nlohmann::json;

namespace {

// 1 - (1 - p_i f) over the draws: the probability that a run with a fraction f of its steps
// not computed as logged is rejected although every participant's worker colludes with it
// (only the draws whose coin gave the segment to the board's own replay can catch it).
double rejected_under_collusion(const std::vector<double>& coins, double f) {
  double escape = 1;
  for (double p : coins) escape *= 1 - p * f;
  return 1 - escape;
}

// The guarantee of an entry with S segments, c drawn segments replayed and passed (`coins`: each
// such draw's probability of the board's own replay), `pending` draws waiting, `replayed`
// distinct segments passed of which `by_board` the board replayed itself.
json guarantee_json(int64_t S, const std::vector<double>& coins, int64_t pending, int64_t replayed,
                    int64_t by_board) {
  const int64_t c = int64_t(coins.size());
  const bool everything = by_board == S;
  json bounds = json::array();
  for (double f : {0.01, 0.05, 0.1, 0.25, 1.0})
    bounds.push_back({{"f", f},
                      {"rejected_with_probability_at_least",
                       everything ? 1.0 : witness::detection_probability(f, c)},
                      {"under_collusion", everything ? 1.0 : rejected_under_collusion(coins, f)}});
  // The smallest fraction of unfaithful steps rejected with probability 99 %.
  const double f99 = everything ? 0.0 : c > 0 ? 1.0 - std::pow(0.01, 1.0 / double(c)) : 1.0;
  std::optional<double> f99_colluding;
  if (everything) {
    f99_colluding = 0.0;
  } else if (rejected_under_collusion(coins, 1.0) >= 0.99) {
    double lo = 0, hi = 1;
    for (int i = 0; i < 60; ++i) {
      const double mid = (lo + hi) / 2;
      (rejected_under_collusion(coins, mid) >= 0.99 ? hi : lo) = mid;
    }
    f99_colluding = hi;
  }
  bool same_p = true;
  for (double p : coins) same_p &= p == coins.front();
  std::string statement;
  if (everything) {
    statement = "every segment was replayed by the board itself: every step was computed as logged";
  } else {
    statement = fmt::format(
        "the first and the last segment were replayed by the board, and {} segment(s) drawn "
        "uniformly from the other {} by the board after the entry was committed: a run in which at "
        "least a fraction f of the steps were not computed as logged is rejected with probability "
        ">= 1 - (1 - f)^{} when no participant colludes with the entrant",
        c, S - 2, c);
    if (c > 0) statement += fmt::format(", so with 99 % probability for f >= {:.3g}", f99);
    statement += fmt::format(
        "; whatever the number of participants colluding with it, only the board's own replays "
        "count: >= 1 - {}",
        c == 0 ? std::string("1 (nothing)")
        : same_p ? fmt::format("(1 - {:.3g} f)^{}", coins.front(), c)
                 : fmt::format("the product of (1 - p f) over the draws' coins p"));
    statement += f99_colluding
                     ? fmt::format(", so with 99 % probability for f >= {:.3g}", *f99_colluding)
                     : std::string(", which never reaches 99 %");
  }
  return {{"challenges", c},
          {"pending_draws", pending},
          {"segments", S},
          {"segments_replayed", replayed},
          {"segments_replayed_by_board", by_board},
          {"every_step", everything},
          {"f_rejected_with_99_percent", f99},
          {"f_rejected_with_99_percent_under_collusion",
           f99_colluding ? json(*f99_colluding) : json(nullptr)},
          {"statement", statement},
          {"bounds", bounds}};
}

// An entry's verification without its checks, draws and reports.
json summary_json(const std::string& status, int64_t steps, int64_t K, int64_t S, double val_loss,
                  int64_t params, int64_t tokens, const std::string& failure, bool certified,
                  int64_t given, int64_t required) {
  json out = {{"status", status},     {"steps", steps},       {"segment_steps", K},
              {"segments", S},        {"val_loss", val_loss}, {"params", params},
              {"tokens", tokens},     {"failure", failure},   {"certified", certified}};
  out["contributions"] = {{"confirmed_replays", given}, {"required", required}};
  out["ranked"] = status == "certified" && given >= required;
  if (status == "certified" && !out["ranked"])
    out["unranked_because"] = fmt::format(
        "the submitter's workers have {} confirmed replay(s) of other entries; {} are required",
        given, required);
  return out;
}

}  // namespace

json JobQueue::guarantee(const std::string& entry) {
  const auto res = db_.query("SELECT segments FROM board_results WHERE entry = $1", {entry});
  const int64_t S = res.at(0).integer(0);
  std::vector<double> coins;
  int64_t pending = 0;
  for (const Row& r : db_.query(
           "SELECT s.status, COALESCE(c.p, 0) FROM board_draws d JOIN board_segments s ON s.entry "
           "= d.entry AND s.segment = d.segment LEFT JOIN board_draw_coins c ON c.entry = d.entry "
           "AND c.n = d.n WHERE d.entry = $1 AND d.origin <> 'always' ORDER BY d.n",
           {entry})) {
    if (r.text(0) == "passed") coins.push_back(r.real(1));
    if (r.text(0) == "pending") ++pending;
  }
  int64_t replayed = 0, by_board = 0;
  for (const Row& r : db_.query("SELECT decided_by FROM board_segments WHERE entry = $1 AND "
                                "segment >= 0 AND status = 'passed'",
                                {entry})) {
    ++replayed;
    by_board += r.text(0) == kBoardWorker;
  }
  return guarantee_json(S, coins, pending, replayed, by_board);
}

std::map<std::string, json> JobQueue::summaries(const std::string& track) {
  // A few grouped queries for the whole track, whatever its number of entries.
  std::set<std::string> revoked_ids;
  for (const Row& r : db_.query("SELECT participant FROM board_revoked", {})) revoked_ids.insert(r.text(0));
  std::map<std::string, int64_t> given;
  for (const Row& r : db_.query(
           "SELECT r.reporter, COUNT(*) FROM board_reports r JOIN board_entries e ON e.id = "
           "r.entry WHERE r.standing = 'confirmed' AND e.participant <> r.reporter GROUP BY "
           "r.reporter",
           {}))
    given[r.text(0)] = revoked_ids.count(r.text(0)) ? 0 : r.integer(1);
  std::map<std::string, std::pair<std::vector<double>, int64_t>> draws;  // (passed, pending)
  for (const Row& r : db_.query(
           "SELECT d.entry, s.status, COALESCE(c.p, 0) FROM board_draws d JOIN board_segments s ON "
           "s.entry = d.entry AND s.segment = d.segment JOIN board_entries e ON e.id = d.entry "
           "LEFT JOIN board_draw_coins c ON c.entry = d.entry AND c.n = d.n "
           "WHERE e.track = $1 AND d.origin <> 'always' ORDER BY d.entry, d.n",
           {track})) {
    if (r.text(1) == "passed") draws[r.text(0)].first.push_back(r.real(2));
    if (r.text(1) == "pending") draws[r.text(0)].second += 1;
  }
  std::map<std::string, std::pair<int64_t, int64_t>> replayed;  // (passed, by the board)
  for (const Row& r : db_.query(
           "SELECT s.entry, s.decided_by FROM board_segments s JOIN board_entries e ON e.id = "
           "s.entry WHERE e.track = $1 AND s.segment >= 0 AND s.status = 'passed'",
           {track})) {
    replayed[r.text(0)].first += 1;
    replayed[r.text(0)].second += r.text(1) == kBoardWorker;
  }
  std::map<std::string, json> out;
  for (const Row& r : db_.query(
           "SELECT r.entry, r.steps, r.segment_steps, r.segments, r.val_loss, r.params, r.tokens, "
           "r.detail, r.certificate, e.status, e.participant FROM board_results r JOIN "
           "board_entries e ON e.id = r.entry WHERE e.track = $1",
           {track})) {
    const std::string& e = r.text(0);
    json v = summary_json(r.text(9), r.integer(1), r.integer(2), r.integer(3), r.real(4),
                          r.integer(5), r.integer(6), r.text(7), !r.text(8).empty(),
                          given.count(r.text(10)) ? given[r.text(10)] : 0, policy_.contribution);
    if (r.text(9) != "struck")
      v["guarantee"] = guarantee_json(r.integer(3), draws[e].first, draws[e].second,
                                      replayed[e].first, replayed[e].second);
    out[e] = v;
  }
  return out;
}

void JobQueue::refresh(const std::string& entry) {
  const auto segs = db_.query(
      "SELECT segment, first_step, end_step, status, detail, decided_by FROM board_segments "
      "WHERE entry = $1 ORDER BY first_step, segment",
      {entry});
  const Row* failed = nullptr;
  bool pending = false;
  for (const Row& r : segs) {
    if (r.text(3) == "failed" && !failed) failed = &r;
    if (r.text(3) == "pending") pending = true;
  }
  std::string status = failed ? "struck" : pending ? "verifying" : "certified";
  const std::string detail =
      failed ? check_label(failed->integer(0), failed->integer(1), failed->integer(2)) + ": " +
                   failed->text(4)
             : "";
  const auto old = db_.query(
      "SELECT e.status, r.certificate, r.facts, r.steps, r.segments, r.segment_steps, e.track, "
      "p.name, e.name FROM board_entries e JOIN board_results r ON r.entry = e.id JOIN "
      "board_participants p ON p.id = e.participant WHERE e.id = $1",
      {entry});
  if (old.empty()) return;
  const Row& o = old[0];
  // A certified entry whose new draws (a re-challenge, a coin that wants the board's replay)
  // are pending stays certified, its certificate served as issued: what it states, of the draws
  // decided when it was signed, still holds, and anyone's re-challenge must not unrank it. A
  // failed draw strikes it; a revocation withdraws the certificate, and then it waits like any.
  const bool kept = status == "verifying" && o.text(0) == "certified" && !o.text(1).empty() &&
                    standing_certificate(json::parse(o.text(1)).value("id", std::string()));
  if (kept) status = "certified";
  std::string certificate;
  if (kept) {
    certificate = o.text(1);
  } else if (status == "certified") {
    const json g = guarantee(entry);
    // Re-signed when the guarantee changed (a re-challenge); otherwise kept as issued.
    if (o.text(0) == "certified" && !o.text(1).empty() &&
        json::parse(o.text(1))["guarantee"]["challenges"] == g["challenges"]) {
      certificate = o.text(1);
    } else {
      json c = json::parse(o.text(2));
      const int64_t K = o.integer(5);
      json always = json::array(), drawn = json::array(), challenged = json::array(),
           checks = json::array();
      for (const Row& d : db_.query(
               "SELECT segment, origin FROM board_draws WHERE entry = $1 ORDER BY n", {entry}))
        (d.text(1) == "always" ? always : drawn).push_back(d.integer(0) * K);
      for (const Row& r : segs) {
        if (r.integer(0) >= 0) challenged.push_back(r.integer(1));
        checks.push_back({{"stage", check_label(r.integer(0), r.integer(1), r.integer(2))},
                          {"passed", true},
                          {"detail", r.text(4)},
                          {"decided_by", r.text(5)}});
      }
      c["format"] = witness::kCertificateFormat;
      c["run"] = o.text(8);
      c["steps"] = o.integer(3);
      c["segments"] = o.integer(4);
      c["segment_steps"] = K;
      c["always_replayed_segments"] = always;
      c["drawn_segments"] = drawn;
      c["challenged_segments"] = challenged;
      c["challenge_source"] = {
          {"kind", "board"},
          {"detail", "the board's random source (getrandom), drawn after the entry was committed"}};
      c["replayed_on"] =
          "the board's workers: the first and last segment and the final checks by the board's "
          "own replay; each drawn segment by the board's own replay when a draw's coin said so, "
          "otherwise by two participants' workers that agree on the verdict and on the state "
          "hash at a step inside it that no file holds";
      c["checks"] = checks;
      c["result"] = "certified";
      c["guarantee"] = {{"challenges", g["challenges"]},
                        {"statement", g["statement"]},
                        {"bounds", g["bounds"]},
                        {"f_rejected_with_99_percent_under_collusion",
                         g["f_rejected_with_99_percent_under_collusion"]}};
      c["verified_at"] = utc_now();
      c["board"] = {{"entry", entry}, {"track", o.text(6)}, {"participant", o.text(7)}};
      const json signed_c = witness::sign_certificate(c, key_);
      certificate = signed_c.dump();
      db_.exec("INSERT INTO board_certificates (id, entry, issued, withdrawn, status, reason) "
               "VALUES ($1, $2, $3, '', '', '')",
               {signed_c["id"].get<std::string>(), entry, signed_c["verified_at"].get<std::string>()});
    }
  }
  if (status == "struck") {
    withdraw_certificates(entry, "struck", detail);
    // Nothing more to learn about the run: first replays not yet leased are dropped. Checks of
    // participants' reports stay, so that a worker that lied about this entry is still caught.
    db_.exec("DELETE FROM board_jobs WHERE entry = $1 AND state = 'queued' AND role = 'replay'",
             {entry});
  } else if (status == "verifying") {
    // Every pending check has a job: one whose jobs were dropped while the entry was struck
    // (a strike that a revoked worker's reports had decided) gets a new one.
    for (const Row& r : segs)
      if (r.text(3) == "pending" &&
          db_.query("SELECT 1 FROM board_jobs WHERE entry = $1 AND segment = $2 AND state <> 'done'",
                    {entry, r.integer(0)})
              .empty())
        queue_job(entry, r.integer(0), "replay", "");
  }
  db_.exec("UPDATE board_entries SET status = $2 WHERE id = $1", {entry, status});
  db_.exec("UPDATE board_results SET detail = $2, certificate = $3 WHERE entry = $1",
           {entry, detail, certificate});
}

std::optional<json> JobQueue::certificate(const std::string& entry) {
  const auto r = db_.query("SELECT certificate FROM board_results WHERE entry = $1", {entry});
  if (r.empty() || r[0].text(0).empty()) return std::nullopt;
  return json::parse(r[0].text(0));
}

json JobQueue::verification(const std::string& entry, bool full) {
  const auto res = db_.query(
      "SELECT r.steps, r.segment_steps, r.segments, r.val_loss, r.params, r.tokens, r.detail, "
      "r.certificate, e.status, e.participant FROM board_results r JOIN board_entries e ON e.id = "
      "r.entry WHERE r.entry = $1",
      {entry});
  if (res.empty()) return json::object();
  const Row& r = res[0];
  json out = summary_json(r.text(8), r.integer(0), r.integer(1), r.integer(2), r.real(3),
                          r.integer(4), r.integer(5), r.text(6), !r.text(7).empty(),
                          contributions(r.text(9)), policy_.contribution);
  if (r.text(8) != "struck") out["guarantee"] = guarantee(entry);
  if (!full) return out;
  json segs = json::array();
  for (const Row& s : db_.query(
           "SELECT segment, first_step, end_step, status, detail, decided_by FROM board_segments "
           "WHERE entry = $1 ORDER BY first_step, segment",
           {entry}))
    segs.push_back({{"segment", s.integer(0)},
                    {"label", check_label(s.integer(0), s.integer(1), s.integer(2))},
                    {"first_step", s.integer(1)},
                    {"end_step", s.integer(2)},
                    {"status", s.text(3)},
                    {"detail", s.text(4)},
                    {"decided_by", s.text(5)}});
  out["checks"] = segs;
  json draws = json::array();
  for (const Row& d : db_.query(
           "SELECT d.n, d.segment, d.origin, COALESCE(p.name, d.requested_by), d.created FROM "
           "board_draws d LEFT JOIN board_participants p ON p.id = d.requested_by WHERE d.entry = "
           "$1 ORDER BY d.n",
           {entry}))
    draws.push_back({{"n", d.integer(0)},
                     {"segment", d.integer(1)},
                     {"origin", d.text(2)},
                     {"requested_by", d.text(3)},
                     {"created", d.text(4)}});
  out["draws"] = draws;
  json reports = json::array();
  for (const Row& p : db_.query(
           "SELECT r.segment, COALESCE(p.name, r.reporter), r.worker, r.passed, r.detail, "
           "r.seconds, r.standing, r.created FROM board_reports r LEFT JOIN board_participants p "
           "ON p.id = r.reporter WHERE r.entry = $1 ORDER BY r.created_ms, r.job",
           {entry}))
    reports.push_back({{"segment", p.integer(0)},
                       {"reporter", p.text(1)},
                       {"worker", p.text(2)},
                       {"passed", p.integer(3) != 0},
                       {"detail", p.text(4)},
                       {"seconds", p.real(5)},
                       {"standing", p.text(6)},
                       {"created", p.text(7)}});
  out["reports"] = reports;
  return out;
}

}  // namespace wit::board
