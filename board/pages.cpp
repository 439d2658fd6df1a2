// The board's HTML pages for tracks and entries (board/site.h): plain server-rendered HTML with
// inline SVG, readable without JavaScript. Everything shown is also under /api/.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "board/site.h"
#include "core/error.h"
#include "record/reader.h"
#include "record/summary.h"

namespace wit::board {

namespace {

// 24576 -> "24,576": budgets and counts read at a glance.
std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
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
      html_escape(t.family), with_commas(t.max_params), with_commas(t.max_tokens), html_escape(t.split),
      html_escape(t.metric), t.eval_sequences, t.eval_seq_len);
}

// The order of the ranking's groups.
int group(const nlohmann::json& e) {
  const auto& v = e["verification"];
  if (v.value("ranked", false)) return 0;
  const std::string s = e["status"];
  return s == "certified" ? 1 : s == "verifying" ? 2 : 3;
}

// A report's or a check's place: a segment with its number, or the checks that are not one.
std::string segment_label(int64_t segment) {
  if (segment == -1) return "final checks";
  if (segment == -2) return "audit";
  return fmt::format("segment {}", segment);
}

std::string guarantee_text(const nlohmann::json& v, const std::string& status) {
  if (!v.contains("guarantee")) return "";
  // While checks are pending there is nothing to state yet (the bound would count no draw).
  if (status == "verifying") return "stated once verified";
  const auto& g = v["guarantee"];
  if (g["every_step"].get<bool>()) return "every step replayed";
  const int64_t c = g["challenges"];
  if (c == 0) return "first and last segments replayed";
  // Beside it, what holds if the workers that checked it all colluded with the submitter.
  const auto& colluding = g["f_rejected_with_99_percent_under_collusion"];
  return fmt::format("f ≥ {:.1f} % rejected with 99 % ({} challenges); if checkers collude, {}",
                     100 * g["f_rejected_with_99_percent"].get<double>(), c,
                     colluding.is_null() ? std::string("no fraction with 99 %")
                                         : fmt::format("f ≥ {:.1f} %", 100 * colluding.get<double>()));
}

// The training loss per step and the val loss at each evaluation, as an SVG line chart.
std::string loss_svg(const witness::WitnessLog& log) {
  const auto& steps = log.tables.steps;
  if (steps.empty()) return "<p>No steps.</p>\n";
  float lo = INFINITY, hi = -INFINITY;
  for (const auto& s : steps) {
    if (!std::isfinite(s.fields.loss)) continue;
    lo = std::min(lo, s.fields.loss);
    hi = std::max(hi, s.fields.loss);
  }
  for (const auto& e : log.tables.evals) {
    if (!std::isfinite(e.fields.value)) continue;
    lo = std::min(lo, e.fields.value);
    hi = std::max(hi, e.fields.value);
  }
  if (!(hi > lo)) hi = lo + 1;
  const double W = 640, H = 240, L = 50, R = 10, T = 10, B = 30;
  const double n = double(std::max<size_t>(steps.size(), 2) - 1);
  auto x = [&](double step) { return L + (W - L - R) * step / n; };
  auto y = [&](double v) { return T + (H - T - B) * (hi - v) / (hi - lo); };
  std::string train, val;
  for (const auto& s : steps)
    if (std::isfinite(s.fields.loss))
      train += fmt::format("{:.1f},{:.1f} ", x(double(s.fields.step)), y(s.fields.loss));
  for (const auto& e : log.tables.evals)
    if (e.fields.split == "val" && std::isfinite(e.fields.value))
      val += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#c33\"/>",
                         x(double(e.fields.step) - 1), y(e.fields.value));
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
      "aria-label=\"loss curve\">\n"
      "<rect x=\"{2}\" y=\"{3}\" width=\"{4}\" height=\"{5}\" fill=\"none\" stroke=\"#999\"/>\n"
      "<polyline fill=\"none\" stroke=\"#36c\" stroke-width=\"1.5\" points=\"{6}\"/>\n{7}\n"
      "<text x=\"{2}\" y=\"{8}\" font-size=\"11\">step 0</text>"
      "<text x=\"{9}\" y=\"{8}\" font-size=\"11\" text-anchor=\"end\">step {10}</text>"
      "<text x=\"4\" y=\"{11}\" font-size=\"11\">{12:.3f}</text>"
      "<text x=\"4\" y=\"{13}\" font-size=\"11\">{14:.3f}</text>\n"
      "</svg>\n<p><span style=\"color:#36c\">—</span> training loss per step, "
      "<span style=\"color:#c33\">●</span> val loss</p>\n",
      W, H, L, T, W - L - R, H - T - B, train, val, H - 10, W - R, steps.size(), T + 10, hi,
      H - B, lo);
}

}  // namespace

nlohmann::json Site::ranked_entries(const std::string& track) const {
  std::vector<nlohmann::json> entries;
  JobQueue q(db_, v_.policy, key_);
  auto summaries = q.summaries(track);
  for (auto e : track_entries(db_, track)) {
    e["verification"] = std::move(summaries[e["id"].get<std::string>()]);
    entries.push_back(e);
  }
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const int ga = group(a), gb = group(b);
    if (ga != gb) return ga < gb;
    return ga <= 1 && a["verification"]["val_loss"].template get<double>() <
                          b["verification"]["val_loss"].template get<double>();
  });
  nlohmann::json out = nlohmann::json::array();
  int rank = 0;
  for (auto& e : entries) {
    e["rank"] = group(e) == 0 ? nlohmann::json(++rank) : nlohmann::json(nullptr);
    out.push_back(e);
  }
  return out;
}

Response Site::track_page(const Track& t) const {
  std::string rows;
  {
    std::lock_guard<std::mutex> lock(db_mutex_);
    for (const auto& e : ranked_entries(t.id)) {
      const auto& v = e["verification"];
      std::string status = e["status"];
      if (status == "certified" && !v.value("ranked", false)) status = "certified, not ranked";
      if (status == "struck") status = "struck: " + v.value("failure", std::string());
      rows += fmt::format(
          "<tr class=\"entry\" data-entry=\"{0}\"><td>{1}</td><td><a href=\"/entries/{0}\">{2}</a>"
          "</td><td>{3}</td><td>{4:.4f}</td><td>{5}</td><td>{6}</td><td>{7}</td><td>{8} of {9}</td>"
          "<td class=\"status\">{10}</td></tr>\n",
          html_escape(e["id"]), e["rank"].is_null() ? "" : std::to_string(e["rank"].get<int>()),
          html_escape(e["name"]), html_escape(e["participant"]), v["val_loss"].get<double>(),
          with_commas(v["tokens"].get<int64_t>()), with_commas(v["params"].get<int64_t>()),
          html_escape(guarantee_text(v, e["status"].get<std::string>())),
          v.contains("guarantee") ? v["guarantee"]["segments_replayed"].get<int64_t>() : 0,
          v["segments"].get<int64_t>(), html_escape(status));
    }
  }
  const std::string entries =
      rows.empty() ? "<p>No run has been submitted to this track.</p>\n"
                   : "<table>\n<tr><th>rank</th><th>entry</th><th>submitter</th><th>val loss</th>"
                     "<th>tokens</th><th>parameters</th><th>guarantee</th><th>segments replayed</th>"
                     "<th>status</th></tr>\n" +
                         rows + "</table>\n";
  return {200, "text/html; charset=utf-8",
          page(t.title, "<p>Track <code>" + html_escape(t.id) + "</code></p>\n" +
                            track_rules_html(t) + "<h2>Entries</h2>\n" + entries)};
}

Response Site::entry_page(const std::string& id) const {
  nlohmann::json e;
  {
    std::lock_guard<std::mutex> lock(db_mutex_);
    e = entry_with_verification(id, true);
  }
  if (e.is_null())
    return {404, "text/html; charset=utf-8", page("Not found", "<p>No entry " + html_escape(id) + ".</p>\n")};
  const auto& v = e["verification"];
  std::string body;
  std::string status = e["status"];
  if (status == "certified") status = v.value("ranked", false) ? "certified and ranked" : "certified, not ranked: " + v.value("unranked_because", std::string());
  if (status == "struck") status = "struck: " + v.value("failure", std::string());
  body += fmt::format(
      "<table>\n<tr><th>status</th><td id=\"status\">{}</td></tr>\n"
      "<tr><th>track</th><td><a href=\"/tracks/{}\">{}</a></td></tr>\n"
      "<tr><th>submitter</th><td>{}</td></tr>\n<tr><th>final val loss</th><td>{:.6f}</td></tr>\n"
      "<tr><th>training tokens</th><td>{}</td></tr>\n<tr><th>parameters</th><td>{}</td></tr>\n"
      "<tr><th>steps</th><td>{} in {} segments of {}</td></tr>\n"
      "<tr><th>signed head</th><td><code>{}</code></td></tr>\n"
      "<tr><th>received</th><td>{}</td></tr>\n",
      html_escape(status), html_escape(e["track"]), html_escape(e["track"]), html_escape(e["participant"]),
      v["val_loss"].get<double>(), with_commas(v["tokens"].get<int64_t>()),
      with_commas(v["params"].get<int64_t>()), with_commas(v["steps"].get<int64_t>()),
      v["segments"].get<int64_t>(), v["segment_steps"].get<int64_t>(),
      html_escape(e["head"]), html_escape(e["created"]));
  if (v.contains("guarantee"))
    body += fmt::format(
        "<tr><th>guarantee</th><td id=\"guarantee\">{}</td></tr>\n",
        html_escape(e["status"] == "verifying"
                        ? fmt::format("stated once every check has passed ({} drawn segment(s) "
                                      "still to be decided)",
                                      v["guarantee"].value("pending_draws", int64_t(0)))
                        : v["guarantee"]["statement"].get<std::string>()));
  if (v.value("certified", false))
    body += fmt::format(
        "<tr><th>certificate</th><td><a href=\"/api/entries/{}/certificate\">certificate.json</a>, "
        "signed by the board's key {}</td></tr>\n",
        html_escape(id), html_escape(witness::key_id(key_.public_key())));
  body += "</table>\n";

  // The witness summary and the loss curve, from the board's copy of the log.
  const auto log_sha = e["receipt"]["files"]["witness.h5"].get<std::string>();
  if (const auto path = files_.path_of(digest_from_hex(log_sha, "witness.h5"))) {
    try {
      const witness::WitnessLog log = witness::read_log(*path);
      // What `wit inspect` prints about the board's copy of the log.
      body += "<h2>Witness</h2>\n<pre id=\"witness\">" +
              html_escape(witness::summary_text(log, witness::check_log(log), "witness.h5 (" + log_sha.substr(0, 16) + ")")) +
              "</pre>\n<h2>Loss</h2>\n";
      body += loss_svg(log);
    } catch (const Error& err) {
      body += "<p>The witness log cannot be read: " + html_escape(err.what()) + "</p>\n";
    }
  }

  body += "<h2>Checks</h2>\n<table>\n<tr><th>what</th><th>result</th><th>decided by</th><th>detail</th></tr>\n";
  for (const auto& c : v["checks"])
    body += fmt::format("<tr class=\"check\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                        html_escape(c["label"]), html_escape(c["status"]),
                        html_escape(c["decided_by"]), html_escape(c["detail"]));
  body += "</table>\n<h2>Challenges</h2>\n<table>\n<tr><th>#</th><th>segment</th><th>origin</th><th>requested by</th><th>at</th></tr>\n";
  for (const auto& d : v["draws"])
    body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                        d["n"].get<int64_t>(), d["segment"].get<int64_t>(), html_escape(d["origin"]),
                        html_escape(d["requested_by"]), html_escape(d["created"]));
  body += "</table>\n<h2>Replays</h2>\n<table>\n<tr><th>segment</th><th>replayed by</th><th>worker</th><th>result</th><th>standing</th><th>seconds</th><th>detail</th></tr>\n";
  for (const auto& r : v["reports"])
    body += fmt::format(
        "<tr class=\"report\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td></tr>\n",
        segment_label(r["segment"].get<int64_t>()), html_escape(r["reporter"]), html_escape(r["worker"]),
        r["passed"].get<bool>() ? "passed" : "failed", html_escape(r["standing"]),
        r["seconds"].get<double>(), html_escape(r["detail"]));
  body += "</table>\n";
  return {200, "text/html; charset=utf-8", page("Entry " + e["name"].get<std::string>(), body)};
}

}  // namespace wit::board
