#include "board/site.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"

namespace wit::board {

namespace {

nlohmann::json track_json(const Track& t) {
  return {{"id", t.id},
          {"title", t.title},
          {"dataset",
           {{"manifest_root", to_hex(t.manifest_root)},
            {"data_layout", to_hex(t.data_layout)},
            {"tokenizer", t.tokenizer}}},
          {"model", {{"family", t.family}, {"max_params", t.max_params}}},
          {"budget", {{"max_tokens", t.max_tokens}}},
          {"eval",
           {{"split", t.split},
            {"metric", t.metric},
            {"seq_len", t.eval_seq_len},
            {"sequences", t.eval_sequences}}}};
}

Response json(int status, const nlohmann::json& j) {
  return {status, "application/json", j.dump(2) + "\n"};
}

Response api_error(int status, const std::string& message) {
  return json(status, {{"error", message}});
}

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0} · wit board</title>\n"
      "<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}}"
      "table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.3em .6em;"
      "text-align:left}}code{{font-size:90%}}</style>\n</head>\n<body>\n"
      "<nav><a href=\"/\">wit board</a></nav>\n<h1>{0}</h1>\n{1}</body>\n</html>\n",
      html_escape(title), body);
}

std::string track_rules_html(const Track& t) {
  return fmt::format(
      "<table>\n"
      "<tr><th>dataset</th><td>manifest root <code>{}</code>, layout <code>{}</code> ({} "
      "tokens)</td></tr>\n"
      "<tr><th>model</th><td>{}, at most {} parameters</td></tr>\n"
      "<tr><th>budget</th><td>at most {} training tokens</td></tr>\n"
      "<tr><th>ranked by</th><td>{} {} over {} sequences of {} tokens</td></tr>\n"
      "</table>\n",
      to_hex(t.manifest_root), to_hex(t.data_layout), html_escape(t.tokenizer),
      html_escape(t.family), t.max_params, t.max_tokens, html_escape(t.split),
      html_escape(t.metric), t.eval_sequences, t.eval_seq_len);
}

}  // namespace

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

Site::Site(std::vector<Track> tracks, Db& db, BlobStore& files, const witness::SigningKey& key)
    : tracks_(std::move(tracks)), db_(db), files_(files), key_(key) {}

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

std::optional<uint64_t> number(const std::optional<std::string>& s) {
  if (!s || s->empty() || s->size() > 19 || s->find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(*s);
}

}  // namespace

Response Site::file(const Request& r, const std::string& path) const {
  const std::string hex = path.substr(11);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    return api_error(400, "a file is named by its SHA-256: 64 lowercase hex digits");
  const Digest sha = digest_from_hex(hex, "file");
  if (!caller(r)) return api_error(401, "uploading takes a participant's token (Authorization: Bearer TOKEN)");
  std::lock_guard<std::mutex> lock(files_mutex_);
  try {
    if (r.method == "GET") {
      const auto size = number(query_value(r.target, "size"));
      if (!size) return api_error(400, "GET /api/files/SHA256 needs ?size=BYTES");
      const uint64_t at = files_.begin(sha, *size);
      return json(200, {{"sha256", hex}, {"size", *size}, {"offset", at}, {"complete", files_.has(sha)}});
    }
    const auto offset = number(query_value(r.target, "offset"));
    if (!offset) return api_error(400, "PUT /api/files/SHA256 needs ?offset=BYTE");
    const uint64_t at = files_.append(sha, *offset, r.body.data(), r.body.size());
    bool complete = false;
    if (at == files_.announced_size(sha)) {
      files_.finish(sha);
      complete = true;
    }
    return json(200, {{"sha256", hex}, {"offset", at}, {"complete", complete}});
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

Response Site::handle(const Request& r) const {
  const std::string path = r.target.substr(0, r.target.find('?'));
  const bool api = path.rfind("/api/", 0) == 0;
  if (path.rfind("/api/files/", 0) == 0 && (r.method == "GET" || r.method == "PUT"))
    return file(r, path);
  if (path == "/api/entries" && r.method == "POST") {
    const auto p = caller(r);
    if (!p) return api_error(401, "submitting takes a participant's token (Authorization: Bearer TOKEN)");
    try {
      const Submission s = parse_submission(r.body);
      std::lock_guard<std::mutex> files_lock(files_mutex_);
      std::lock_guard<std::mutex> db_lock(db_mutex_);
      return json(201, submit_entry(db_, files_, tracks_, key_, *p, s));
    } catch (const Error& e) {
      return api_error(400, e.what());
    }
  }
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
    return json(200, {{"id", p->id}, {"name", p->name}, {"admin", p->admin}});
  }
  if (path == "/api/tracks") {
    nlohmann::json list = nlohmann::json::array();
    for (const Track& t : tracks_) list.push_back(track_json(t));
    return json(200, {{"tracks", list}});
  }
  if (path.rfind("/api/tracks/", 0) == 0) {
    const std::string id = path.substr(12);
    const Track* t = find(id);
    if (!t) return api_error(404, fmt::format("no track '{}'", id));
    nlohmann::json j = track_json(*t);
    std::lock_guard<std::mutex> lock(db_mutex_);
    j["entries"] = track_entries(db_, id);
    return json(200, j);
  }
  if (path.rfind("/api/entries/", 0) == 0) {
    std::lock_guard<std::mutex> lock(db_mutex_);
    const auto e = entry_by_id(db_, path.substr(13));
    if (!e) return api_error(404, fmt::format("no entry '{}'", path.substr(13)));
    return json(200, *e);
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
    std::string rows;
    {
      std::lock_guard<std::mutex> lock(db_mutex_);
      for (const auto& e : track_entries(db_, id))
        rows += fmt::format(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
            html_escape(e["name"]), html_escape(e["participant"]), html_escape(e["status"]),
            e["steps"].get<int64_t>(), html_escape(e["head"].get<std::string>().substr(0, 16)),
            html_escape(e["created"]));
    }
    const std::string entries =
        rows.empty() ? "<p>No run has been submitted to this track.</p>\n"
                     : "<table>\n<tr><th>entry</th><th>participant</th><th>status</th><th>steps</th>"
                       "<th>signed head</th><th>received</th></tr>\n" + rows + "</table>\n";
    return {200, "text/html; charset=utf-8",
            page(t->title, "<p>Track <code>" + html_escape(t->id) + "</code></p>\n" +
                               track_rules_html(*t) + "<h2>Entries</h2>\n" + entries)};
  }
  return {404, "text/html; charset=utf-8", page("Not found", "<p>Nothing at " + html_escape(path) + ".</p>\n")};
}

}  // namespace wit::board
