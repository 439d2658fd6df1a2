#include "board/site.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <optional>

#include "board/ids.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/json.h"

namespace wit::board {

namespace {

constexpr uint64_t kDownloadPiece = 16 << 20;

Response json_response(int status, const nlohmann::json& j) {
  return {status, "application/json", j.dump(2) + "\n"};
}

Response api_error(int status, const std::string& message) {
  return json_response(status, {{"error", message}});
}

}  // namespace

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0} · wit board</title>\n"
      // Narrow screens (390 px phones): a wide table scrolls inside itself, long hex and the
      // witness summary wrap, the chart scales; the page itself never scrolls sideways.
      "<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}}"
      "table{{border-collapse:collapse;display:block;overflow-x:auto;max-width:100%}}"
      "td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}"
      "code{{font-size:90%;word-break:break-all}}pre{{white-space:pre-wrap;word-break:break-all}}"
      "svg{{max-width:100%;height:auto}}"
      "@media (max-width:40em){{body{{margin:1em auto;padding:0 .5em}}h1{{font-size:1.5em}}"
      "td,th{{padding:.2em .3em}}}}"
      "</style>\n</head>\n<body>\n"
      "<nav><a href=\"/\">wit board</a></nav>\n<h1>{0}</h1>\n{1}</body>\n</html>\n",
      html_escape(title), body);
}


std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Site::Site(std::vector<Track> tracks, Db& db, BlobStore& files, const witness::SigningKey& key,
           SiteOptions verification)
    : tracks_(std::move(tracks)), db_(db), files_(files), key_(key), v_(std::move(verification)) {}

namespace {

// The value of `key` in the target's query string, if any.
std::optional<std::string> query_value(const std::string& target, const std::string& key) {
  const size_t q = target.find('?');
  if (q == std::string::npos) return std::nullopt;
  size_t at = q + 1;
  while (at <= target.size()) {
    const size_t end = std::min(target.find('&', at), target.size());
    const std::string pair = target.substr(at, end - at);
    if (pair.rfind(key + "=", 0) == 0) return pair.substr(key.size() + 1);
    at = end + 1;
  }
  return std::nullopt;
}

bool used_by_an_entry(Db& db, const std::string& hex) {
  return !db.query("SELECT 1 FROM board_entries WHERE files LIKE $1", {"%\"" + hex + "\"%"}).empty();
}

std::optional<uint64_t> number(const std::optional<std::string>& s) {
  if (!s || s->empty() || s->size() > 19 || s->find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(*s);
}

}  // namespace

std::shared_ptr<std::mutex> Site::upload_lock(const Digest& sha) const {
  std::lock_guard<std::mutex> lock(upload_locks_mutex_);
  for (auto it = upload_locks_.begin(); it != upload_locks_.end();)
    it = it->second.expired() ? upload_locks_.erase(it) : std::next(it);
  auto& slot = upload_locks_[sha];
  std::shared_ptr<std::mutex> m = slot.lock();
  if (!m) slot = m = std::make_shared<std::mutex>();
  return m;
}

std::optional<Response> Site::charge_upload(const std::string& who, const std::string& hex,
                                            uint64_t size, bool published) const {
  uint64_t open = 0, unused = 0;  // bytes: unfinished; finished or not, in no entry
  int64_t open_count = 0, unused_count = 0;
  bool mine = false;
  for (const Row& u : db_.query("SELECT sha256, size FROM board_uploads WHERE participant = $1", {who})) {
    if (u.text(0) == hex) {
      mine = true;
      continue;
    }
    const Digest other = digest_from_hex(u.text(0), "upload");
    unused += uint64_t(u.integer(1));
    ++unused_count;
    if (files_.has(other)) {
      // Finished (by anyone): this participant's own unfinished bytes of it, if any, are spare.
      const std::shared_ptr<std::mutex> theirs = upload_lock(other);
      std::unique_lock<std::mutex> busy(*theirs, std::try_to_lock);
      if (busy.owns_lock()) files_.abandon(other, who);
      continue;
    }
    open += uint64_t(u.integer(1));
    ++open_count;
  }
  const int64_t days = v_.upload_expiry_s / 86400;
  if (!published && !mine && open_count >= v_.max_open_uploads)
    return api_error(413, fmt::format("you have {} unfinished uploads, this board's limit per participant: finish one first (one unfinished for {} days is dropped)",
                                      open_count, days));
  if (!published && open + size > v_.upload_quota)
    return api_error(413, fmt::format("your unfinished uploads would hold {} bytes, over this board's quota of {} per participant: finish one first (one unfinished for {} days is dropped)",
                                      open + size, v_.upload_quota, days));
  if (!mine && unused_count >= v_.max_unused_files)
    return api_error(413, fmt::format("you have {} uploaded files no entry uses yet, this board's limit per participant: submit the run they belong to first (a file no entry uses for {} days is dropped)",
                                      unused_count, days));
  if (unused + size > v_.unused_quota)
    return api_error(413, fmt::format("your uploaded files that no entry uses yet would hold {} bytes, over this board's quota of {} per participant: submit the run they belong to first (a file no entry uses for {} days is dropped)",
                                      unused + size, v_.unused_quota, days));
  if (!mine)
    db_.exec("INSERT INTO board_uploads (sha256, participant, size, began) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
             {hex, who, int64_t(size), utc_now()});
  else if (published)  // announced again: it stays 7 days from now, still charged to this one
    db_.exec("UPDATE board_uploads SET began = $3 WHERE sha256 = $1 AND participant = $2",
             {hex, who, utc_now()});
  return std::nullopt;
}

void Site::expire_uploads(const std::string& current) const {
  const std::string expired = utc_at(int64_t(unix_now()) - v_.upload_expiry_s);
  for (const Row& u : db_.query("SELECT sha256, participant FROM board_uploads WHERE began < $1", {expired})) {
    const std::string hex = u.text(0), who = u.text(1);
    if (hex == current) continue;
    const Digest sha = digest_from_hex(hex, "upload");
    // A file being written right now is left for a later pass, its row with it.
    const std::shared_ptr<std::mutex> lock = upload_lock(sha);
    std::unique_lock<std::mutex> busy(*lock, std::try_to_lock);
    if (!busy.owns_lock()) continue;
    db_.exec("DELETE FROM board_uploads WHERE sha256 = $1 AND participant = $2", {hex, who});
    files_.abandon(sha, who);
    if (files_.has(sha) && !used_by_an_entry(db_, hex) &&
        db_.query("SELECT 1 FROM board_uploads WHERE sha256 = $1", {hex}).empty())
      files_.remove(sha);
  }
}

Response Site::file(const Request& r, const std::string& path) const {
  const std::string hex = path.substr(11);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    return api_error(400, "a file is named by its SHA-256: 64 lowercase hex digits");
  const Digest sha = digest_from_hex(hex, "file");
  const auto me = caller(r);
  if (!me) return api_error(401, "uploading takes a participant's token (Authorization: Bearer TOKEN)");
  const std::shared_ptr<std::mutex> upload = upload_lock(sha);
  std::lock_guard<std::mutex> lock(*upload);
  try {
    if (r.method == "GET") {
      const auto size = number(query_value(r.target, "size"));
      if (!size) return api_error(400, "GET /api/files/SHA256 needs ?size=BYTES");
      {
        // Uploads are the board's disk held for a participant: bounded per participant until
        // an entry uses them.
        std::lock_guard<std::mutex> db_lock(db_mutex_);
        expire_uploads(hex);
        if (!files_.has(sha)) {
          if (auto refused = charge_upload(me->id, hex, *size, false)) return *refused;
        } else if (!used_by_an_entry(db_, hex)) {
          // A finished file this participant means to use (its own, or another's): it stays
          // while anyone's announcement holds it, charged to each that does.
          if (auto refused = charge_upload(me->id, hex, files_.announced_size(sha), true))
            return *refused;
        }
      }
      const uint64_t at = files_.begin(sha, *size, me->id);
      if (!files_.has(sha)) {
        // The size the store now holds for this upload is the one its quota row counts (after a
        // hash mismatch discarded the bytes, the same file may be announced with another size).
        std::lock_guard<std::mutex> db_lock(db_mutex_);
        db_.exec("UPDATE board_uploads SET size = $3 WHERE sha256 = $1 AND participant = $2",
                 {hex, me->id, int64_t(*size)});
      }
      return json_response(200, {{"sha256", hex}, {"size", *size}, {"offset", at}, {"complete", files_.has(sha)}});
    }
    const auto offset = number(query_value(r.target, "offset"));
    if (!offset) return api_error(400, "PUT /api/files/SHA256 needs ?offset=BYTE");
    const uint64_t at = files_.append(sha, *offset, r.body.data(), r.body.size(), me->id);
    bool complete = false;
    if (at == files_.announced_size(sha, me->id)) {
      files_.finish(sha, me->id);
      complete = true;
    }
    return json_response(200, {{"sha256", hex}, {"offset", at}, {"complete", complete}});
  } catch (const Error& e) {
    // A hash that does not match what arrived is unprocessable; anything else a bad request.
    const std::string what = e.what();
    return api_error(what.find("hash to") != std::string::npos ? 422 : 400, what);
  }
}

std::optional<Participant> Site::caller(const Request& r) const {
  const std::string prefix = "Bearer ";
  if (r.authorization.rfind(prefix, 0) != 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(db_mutex_);
  return participant_for_token(db_, r.authorization.substr(prefix.size()));
}

const Track* Site::find(const std::string& id) const {
  for (const Track& t : tracks_)
    if (t.id == id) return &t;
  return nullptr;
}

nlohmann::json Site::entry_with_verification(const std::string& id, bool full) const {
  auto e = entry_by_id(db_, id);
  if (!e) return nullptr;
  JobQueue q(db_, v_.policy, key_);
  (*e)["verification"] = q.verification(id, full);
  return *e;
}

Response Site::download(const Request& r, const std::string& hex) const {
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    return api_error(400, "a file is named by its SHA-256: 64 lowercase hex digits");
  if (!caller(r)) return api_error(401, "downloading takes a participant's token (Authorization: Bearer TOKEN)");
  const auto path = files_.path_of(digest_from_hex(hex, "file"));
  if (!path) return api_error(404, fmt::format("no file {}", hex));
  {
    // Only files of submitted runs, which every worker may need; the store is no file host.
    std::lock_guard<std::mutex> lock(db_mutex_);
    if (!used_by_an_entry(db_, hex))
      return api_error(404, fmt::format("file {} belongs to no entry", hex));
  }
  const auto offset = number(query_value(r.target, "offset"));
  if (!offset) return api_error(400, "GET /api/files/SHA256/content needs ?offset=BYTE");
  // A piece stays in memory until the client has read it: only so many at once, however many
  // connections ask (else slow readers hold the board's memory).
  if (downloads_.fetch_add(1) >= v_.max_downloads) {
    --downloads_;
    return api_error(503, fmt::format("the board is sending {} pieces of files already, as many as it holds at once: ask again shortly",
                                      v_.max_downloads));
  }
  std::shared_ptr<const void> slot(nullptr, [this](const void*) { --downloads_; });
  std::ifstream in(*path, std::ios::binary);
  const uint64_t size = std::filesystem::file_size(*path);
  if (*offset > size) return api_error(400, fmt::format("offset {} is past the file's {} bytes", *offset, size));
  const uint64_t n = std::min<uint64_t>(kDownloadPiece, size - *offset);
  std::string bytes(n, '\0');
  in.seekg(std::streamoff(*offset));
  in.read(bytes.data(), std::streamsize(n));
  if (!in) return api_error(500, fmt::format("cannot read file {}", hex));
  return {200, "application/octet-stream", std::move(bytes), std::move(slot)};
}

Response Site::jobs(const Request& r, const std::string& path) const {
  if (r.method != "POST") return api_error(405, fmt::format("{} is not allowed on {}", r.method, path));
  const auto p = caller(r);
  if (!p) return api_error(401, "verification jobs take a participant's token (Authorization: Bearer TOKEN)");
  nlohmann::json body = nlohmann::json::object();
  if (!r.body.empty()) {
    body = parse_untrusted_json(r.body);
    if (body.is_discarded() || !body.is_object()) return api_error(400, "the body is not a JSON object");
  }
  const std::string worker = body.contains("worker") && body["worker"].is_string() ? body["worker"].get<std::string>() : "";
  std::lock_guard<std::mutex> lock(db_mutex_);
  JobQueue q(db_, v_.policy, key_);
  if (q.revoked(p->id)) return api_error(403, "your worker standing was revoked: a report of yours was found wrong");
  try {
    if (path == "/api/jobs/lease") {
      auto job = q.lease(p->id);
      if (job)
        for (const auto& [name, sha] : job->files)
          if (const auto f = files_.path_of(digest_from_hex(sha, name)))
            job->sizes[name] = std::filesystem::file_size(*f);
      return json_response(200, {{"job", job ? job_json(*job) : nlohmann::json(nullptr)}});
    }
    const std::string rest = path.substr(10);  // ID/renew or ID/report
    const size_t slash = rest.find('/');
    if (slash == std::string::npos) return api_error(404, fmt::format("no such API path: {}", path));
    const std::string id = rest.substr(0, slash), action = rest.substr(slash + 1);
    if (action == "renew") {
      if (!q.renew(id, p->id))
        return api_error(409, fmt::format("job {} is not leased to you, or you have held it as "
                                          "long as one job may be held (serve --max-hold)",
                                          id));
      return json_response(200, {{"job", id}, {"renewed", true}});
    }
    if (action == "report") {
      if (!body.contains("passed") || !body["passed"].is_boolean() || !body.contains("detail") ||
          !body["detail"].is_string())
        return api_error(400, "a report is {\"passed\": true|false, \"detail\": \"...\", \"seconds\": S, \"worker\": NAME}");
      ReplayResult res{body["passed"].get<bool>(), body["detail"].get<std::string>(),
                       body.contains("seconds") && body["seconds"].is_number() ? body["seconds"].get<double>() : 0.0,
                       body.contains("evidence") && body["evidence"].is_string() ? body["evidence"].get<std::string>() : ""};
      q.report(id, p->id, worker, res);
      return json_response(200, {{"job", id}, {"reported", true}});
    }
    return api_error(404, fmt::format("no such API path: {}", path));
  } catch (const Error& e) {
    const std::string what = e.what();
    return api_error(what.find("not leased to you") != std::string::npos ? 409 : 400, what);
  }
}

Response Site::entry_api(const Request& r, const std::string& path) const {
  const std::string rest = path.substr(13);
  const size_t slash = rest.find('/');
  const std::string id = rest.substr(0, slash);
  const std::string sub = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (sub == "challenges") {
    if (r.method != "POST") return api_error(405, fmt::format("{} is not allowed on {}", r.method, path));
    const auto p = caller(r);
    if (!p) return api_error(401, "re-challenging takes a participant's token (Authorization: Bearer TOKEN)");
    const auto body = parse_untrusted_json(r.body);
    if (body.is_discarded() || !body.is_object() || !body.contains("count") || !body["count"].is_number_integer())
      return api_error(400, "a re-challenge is {\"count\": K}");
    std::lock_guard<std::mutex> lock(db_mutex_);
    if (!entry_by_id(db_, id)) return api_error(404, fmt::format("no entry '{}'", id));
    try {
      JobQueue q(db_, v_.policy, key_);
      const auto drawn = q.rechallenge(id, body["count"].get<int64_t>(), p->id);
      return json_response(200, {{"entry", id}, {"drawn_segments", drawn}});
    } catch (const Error& e) {
      return api_error(400, e.what());
    }
  }
  if (r.method != "GET" && r.method != "HEAD") return api_error(405, fmt::format("{} is not allowed on {}", r.method, path));
  std::lock_guard<std::mutex> lock(db_mutex_);
  if (sub.empty()) {
    const auto e = entry_with_verification(id, true);
    if (e.is_null()) return api_error(404, fmt::format("no entry '{}'", id));
    return json_response(200, e);
  }
  if (sub == "certificate") {
    if (!entry_by_id(db_, id)) return api_error(404, fmt::format("no entry '{}'", id));
    JobQueue q(db_, v_.policy, key_);
    const auto c = q.certificate(id);
    if (!c) return api_error(404, fmt::format("entry {} is not certified", id));
    return json_response(200, *c);
  }
  return api_error(404, fmt::format("no such API path: {}", path));
}

bool Site::slow(const Request& r) const {
  return r.method == "POST" && r.target.substr(0, r.target.find('?')) == "/api/entries";
}

Response Site::participants(const Request& r, const std::string& path) const {
  const auto p = caller(r);
  if (!p) return api_error(401, "managing participants takes an admin token (Authorization: Bearer TOKEN)");
  if (!p->admin) return api_error(403, "managing participants takes an admin token; yours is a participant's");
  std::lock_guard<std::mutex> lock(db_mutex_);
  try {
    if (path == "/api/participants") {
      const auto body = parse_untrusted_json(r.body);
      if (body.is_discarded() || !body.is_object() || !body.contains("name") || !body["name"].is_string())
        return api_error(400, "a new participant is {\"name\": NAME, \"admin\": false}");
      const bool admin = body.contains("admin") && body["admin"].is_boolean() && body["admin"].get<bool>();
      const std::string token = add_participant(db_, body["name"], admin);
      return json_response(201, {{"name", body["name"]}, {"admin", admin}, {"token", token}});
    }
    const std::string rest = path.substr(std::string("/api/participants/").size());
    const size_t slash = rest.find('/');
    if (path.rfind("/api/participants/", 0) == 0 && slash != std::string::npos &&
        rest.substr(slash + 1) == "reinstate") {
      const std::string name = rest.substr(0, slash);
      const auto rows = db_.query("SELECT id FROM board_participants WHERE name = $1", {name});
      if (rows.empty()) return api_error(404, fmt::format("no participant '{}'", name));
      JobQueue q(db_, v_.policy, key_);
      if (!q.reinstate(rows[0].text(0))) return api_error(400, fmt::format("{}'s worker was not revoked", name));
      return json_response(200, {{"name", name}, {"worker_revoked", false}});
    }
    return api_error(404, fmt::format("no such API path: {}", path));
  } catch (const Error& e) {
    return api_error(400, e.what());
  }
}

Response Site::register_key(const Request& r) const {
  const auto p = caller(r);
  if (!p) return api_error(401, "registering a trainer key takes a participant's token (Authorization: Bearer TOKEN)");
  const auto body = parse_untrusted_json(r.body);
  auto hex_field = [&](const char* name, size_t digits) -> std::optional<std::string> {
    if (body.is_discarded() || !body.is_object() || !body.contains(name) || !body[name].is_string())
      return std::nullopt;
    const std::string v = body[name];
    if (v.size() != digits || v.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
    return v;
  };
  const auto key_hex = hex_field("public_key", 64), proof_hex = hex_field("proof", 128);
  if (!key_hex || !proof_hex)
    return api_error(400, "a trainer key is {\"public_key\": 64 hex digits, \"proof\": 128 hex digits "
                          "(its signature of the claim; wit board register-key makes it)}");
  const witness::PublicKey key = digest_from_hex(*key_hex, "public_key");
  std::lock_guard<std::mutex> lock(db_mutex_);
  try {
    register_trainer_key(db_, key_.public_key(), *p, key, *witness::signature_from_hex(*proof_hex));
  } catch (const Error& e) {
    return api_error(400, e.what());
  }
  return json_response(200, {{"participant", p->name}, {"trainer_key", *key_hex}, {"key_id", witness::key_id(key)},
                    {"registered", true}});
}

Response Site::handle(const Request& r) const {
  const std::string path = r.target.substr(0, r.target.find('?'));
  const bool api = path.rfind("/api/", 0) == 0;
  if (path.rfind("/api/files/", 0) == 0 && path.size() > 11 + 64 && path.substr(11 + 64) == "/content" &&
      (r.method == "GET" || r.method == "HEAD"))
    return download(r, path.substr(11, 64));
  if (path.rfind("/api/files/", 0) == 0 && (r.method == "GET" || r.method == "PUT"))
    return file(r, path);
  if (path.rfind("/api/jobs/", 0) == 0) return jobs(r, path);
  if (path == "/api/entries" && r.method == "POST") {
    const auto p = caller(r);
    if (!p) return api_error(401, "submitting takes a participant's token (Authorization: Bearer TOKEN)");
    try {
      const Submission s = parse_submission(r.body);
      // Published files never change, so the audit reads them without holding up uploads.
      const Intake intake{v_.policy, v_.checks, v_.datasets, v_.work_dir, db_mutex_};
      nlohmann::json e = submit_entry(db_, files_, tracks_, key_, *p, s, intake);
      return json_response(201, e);
    } catch (const Error& e) {
      return api_error(400, e.what());
    }
  }
  if (path.rfind("/api/entries/", 0) == 0) return entry_api(r, path);
  if (path.rfind("/api/participants", 0) == 0 && r.method == "POST") return participants(r, path);
  if (path == "/api/me/keys" && r.method == "POST") return register_key(r);
  if (r.method != "GET" && r.method != "HEAD") {
    Response out = api ? api_error(405, fmt::format("{} is not allowed on {}", r.method, path))
                       : Response{405, "text/plain; charset=utf-8", "method not allowed\n"};
    return out;
  }
  if (path == "/api/me") {
    if (r.authorization.empty())
      return api_error(401, "no token: send the header Authorization: Bearer TOKEN");
    const auto p = caller(r);
    if (!p) return api_error(401, "unknown token");
    std::lock_guard<std::mutex> lock(db_mutex_);
    JobQueue q(db_, v_.policy, key_);
    return json_response(200, {{"id", p->id},
                      {"name", p->name},
                      {"admin", p->admin},
                      {"board_key", to_hex(key_.public_key().data(), key_.public_key().size())},
                      {"trainer_keys", trainer_keys(db_, p->id)},
                      {"worker_revoked", q.revoked(p->id)},
                      {"confirmed_replays", q.contributions(p->id)},
                      {"replays_required_to_rank", v_.policy.contribution}});
  }
  if (path == "/api/certificates/status") {
    std::lock_guard<std::mutex> lock(db_mutex_);
    JobQueue q(db_, v_.policy, key_);
    return json_response(200, q.status_list());
  }
  if (path == "/api/tracks") {
    nlohmann::json list = nlohmann::json::array();
    for (const Track& t : tracks_) list.push_back(track_json(t));
    return json_response(200, {{"tracks", list}});
  }
  if (path.rfind("/api/tracks/", 0) == 0) {
    const std::string id = path.substr(12);
    const Track* t = find(id);
    if (!t) return api_error(404, fmt::format("no track '{}'", id));
    nlohmann::json j = track_json(*t);
    std::lock_guard<std::mutex> lock(db_mutex_);
    j["entries"] = ranked_entries(id);
    return json_response(200, j);
  }
  if (api) return api_error(404, fmt::format("no such API path: {}", path));
  if (path == "/") {
    std::string body = "<table>\n<tr><th>track</th><th>dataset</th><th>model</th><th>budget</th></tr>\n";
    for (const Track& t : tracks_)
      body += fmt::format(
          "<tr><td><a href=\"/tracks/{0}\">{0}</a><br>{1}</td><td>{2} tokens, root "
          "<code>{3}</code></td><td>{4}, ≤ {5} parameters</td><td>≤ {6} tokens</td></tr>\n",
          html_escape(t.id), html_escape(t.title), html_escape(t.tokenizer),
          to_hex(t.manifest_root).substr(0, 16), html_escape(t.family), t.max_params,
          t.max_tokens);
    body += "</table>\n";
    return {200, "text/html; charset=utf-8", page("Tracks", body)};
  }
  if (path.rfind("/tracks/", 0) == 0) {
    const std::string id = path.substr(8);
    const Track* t = find(id);
    if (!t) return {404, "text/html; charset=utf-8", page("Not found", "<p>No track " + html_escape(id) + ".</p>\n")};
    return track_page(*t);
  }
  if (path.rfind("/entries/", 0) == 0) return entry_page(path.substr(9));
  return {404, "text/html; charset=utf-8", page("Not found", "<p>Nothing at " + html_escape(path) + ".</p>\n")};
}

}  // namespace wit::board
