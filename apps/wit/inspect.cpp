#include "apps/wit/inspect.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/wit/plot.h"
#include "core/error.h"
#include "witness/log/reader.h"

namespace wit::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path log_path(const fs::path& run) {
  if (fs::is_directory(run)) {
    const fs::path f = run / witness::kLogFileName;
    if (!fs::exists(f))
      fail("{} has no {}: not a run directory of a witnessed run", run.string(),
           witness::kLogFileName);
    return f;
  }
  if (!fs::exists(run)) fail("{} does not exist", run.string());
  return run;
}

std::string short_hex(const Digest& d) { return to_hex(d).substr(0, 16); }

json summary(const witness::WitnessLog& log, const witness::LogReport& r) {
  const auto& t = log.tables;
  const auto& m = log.meta;
  uint64_t tokens = 0;
  for (auto& s : t.steps) tokens += s.fields.tokens;
  json j;
  j["log"] = log.path.string();
  j["schema_version"] = witness::kSchemaVersion;
  j["num_params"] = m.num_params;
  j["manifest_root"] = to_hex(m.manifest_root);
  j["genesis"] = to_hex(log.genesis);
  j["key_id"] = witness::key_id(m.public_key);
  j["public_key"] = to_hex(m.public_key.data(), m.public_key.size());
  j["total_steps"] = r.config ? json(r.config->train.steps) : json(nullptr);
  j["committed_yaml"] = m.committed_yaml;
  j["steps"] = t.steps.size();
  j["complete"] = r.complete;
  j["tokens"] = tokens;
  j["head"] = t.steps.empty() ? to_hex(log.genesis) : to_hex(t.steps.back().hash);
  // Every table's last row hash: equal heads mean equal tables, row for row.
  const witness::Heads h = witness::heads_of(log.genesis, t, t.steps.size(), t.fingerprints.size(),
                                             t.checkpoints.size(), t.evals.size());
  j["heads"] = {{"steps", to_hex(h.step_head)},
                {"fingerprints", to_hex(h.fingerprint_head)},
                {"checkpoints", to_hex(h.checkpoint_head)},
                {"evals", to_hex(h.eval_head)}};
  if (!t.steps.empty()) {
    j["last_loss"] = t.steps.back().fields.loss;
    j["last_step"] = t.steps.back().fields.step;
  }
  json evals = json::array();
  for (auto& e : t.evals)
    evals.push_back({{"step", e.fields.step},
                     {"split", e.fields.split},
                     {"metric", e.fields.metric},
                     {"value", e.fields.value}});
  j["evals"] = evals;
  json ckpts = json::array();
  for (auto& c : t.checkpoints)
    ckpts.push_back({{"step", c.fields.step},
                     {"state_hash", to_hex(c.fields.state_hash)},
                     {"path", witness::checkpoint_file_name(c.fields.step)}});
  j["checkpoints"] = ckpts;
  j["fingerprints"] = t.fingerprints.size();
  j["fingerprint_every"] =
      r.config ? json(r.config->witness.fingerprint_every) : json(nullptr);
  if (r.signed_heads)
    j["signed_head"] = {{"hash", to_hex(witness::head_hash(*r.signed_heads))},
                        {"steps", r.signed_heads->steps},
                        {"fingerprints", r.signed_heads->fingerprints},
                        {"checkpoints", r.signed_heads->checkpoints},
                        {"evals", r.signed_heads->evals}};
  j["chain"] = {{"valid", r.ok()}, {"valid_steps", r.valid_steps}};
  j["signatures"] = {{"count", t.signatures.size()},
                     {"valid", r.signatures_valid},
                     {"signed_steps", r.signed_steps}};
  json problems = json::array();
  for (auto& p : r.problems)
    problems.push_back(
        {{"table", p.table}, {"row", p.row}, {"field", p.field}, {"message", p.message}});
  j["problems"] = problems;
  j["notes"] = r.notes;
  auto sessions = json::parse(m.sessions_json, nullptr, false);
  j["sessions"] = sessions.is_discarded() ? json::array() : sessions;
  json superseded = json::array();
  for (auto& [group, tables] : log.superseded)
    superseded.push_back({{"group", group}, {"steps", tables.steps.size()}});
  j["superseded"] = superseded;
  return j;
}

void print_text(const witness::WitnessLog& log, const witness::LogReport& r, const json& j) {
  const auto& t = log.tables;
  fmt::print("witness log {} (schema {})\n", log.path.string(), witness::kSchemaVersion);
  fmt::print("  model        {:.2f}M parameters, dataset {}, key {}\n",
             double(log.meta.num_params) / 1e6, short_hex(log.meta.manifest_root),
             j["key_id"].get<std::string>());
  fmt::print("  steps        {} of {}{}, {} tokens\n", t.steps.size(),
             r.config ? std::to_string(r.config->train.steps) : std::string("?"),
             r.complete ? " (complete)" : "", j["tokens"].get<uint64_t>());
  if (!t.steps.empty())
    fmt::print("  last loss    {:.4f} (step {})\n", t.steps.back().fields.loss,
               t.steps.back().fields.step);
  for (auto it = t.evals.rbegin(); it != t.evals.rend(); ++it)
    if (it->fields.split == "val" && it->fields.metric == "loss") {
      fmt::print("  val loss     {:.4f} (after {} steps; {} evaluations)\n", it->fields.value,
                 it->fields.step, t.evals.size());
      break;
    }
  fmt::print("  fingerprints {} (every {} steps)\n", t.fingerprints.size(), j["fingerprint_every"].dump());
  if (t.checkpoints.empty())
    fmt::print("  checkpoints  none\n");
  else
    fmt::print("  checkpoints  {}, the last after {} steps: {} (state {})\n", t.checkpoints.size(),
               t.checkpoints.back().fields.step,
               witness::checkpoint_file_name(t.checkpoints.back().fields.step),
               short_hex(t.checkpoints.back().fields.state_hash));
  if (r.ok())
    fmt::print("  chain        valid: {} records, head {}\n", r.valid_steps,
               j["head"].get<std::string>().substr(0, 16));
  else
    fmt::print("  chain        FAILS: valid through {} records; {} problem(s)\n", r.valid_steps,
               r.problems.size());
  fmt::print("  signatures   {} of {} valid, covering {} steps\n", r.signatures_valid,
             t.signatures.size(), r.signed_steps);
  const auto& sessions = j["sessions"];
  std::string worlds;
  for (auto& s : sessions)
    if (s.contains("world_size"))
      worlds += (worlds.empty() ? "" : ", ") + std::to_string(s["world_size"].get<int>()) + " " +
                s.value("dist_mode", std::string("?"));
  fmt::print("  sessions     {} (world size: {})\n", sessions.size(), worlds);
  for (auto& p : r.problems) fmt::print("  PROBLEM      {}\n", p.text());
  for (auto& n : r.notes) fmt::print("  note         {}\n", n);
}

void plot(const witness::WitnessLog& log, const fs::path& png) {
  PlotSeries train{"train loss", {}, {}, false}, val{"val loss", {}, {}, true};
  for (auto& s : log.tables.steps) {
    train.x.push_back(double(s.fields.step + 1));  // after the step
    train.y.push_back(s.fields.loss);
  }
  for (auto& e : log.tables.evals)
    if (e.fields.split == "val" && e.fields.metric == "loss") {
      val.x.push_back(double(e.fields.step));
      val.y.push_back(e.fields.value);
    }
  std::vector<PlotSeries> series{train};
  if (!val.x.empty()) series.push_back(val);
  if (train.x.empty() && val.x.empty()) fail("{} has no steps to plot yet", log.path.string());
  const std::string name = log.path.parent_path().filename().string();
  write_line_plot(png, {"loss of run " + (name.empty() ? log.path.string() : name), "step", "loss"},
                  series);
}

}  // namespace

int inspect(const InspectOptions& o) {
  const fs::path file = log_path(o.run);
  const witness::WitnessLog log = witness::read_log(file);
  std::optional<witness::PublicKey> trusted;
  if (!o.trusted_key.empty()) trusted = witness::load_public_key(o.trusted_key);
  const witness::LogReport report = witness::check_log(log, trusted);
  const json j = summary(log, report);
  if (o.json)
    fmt::print("{}\n", j.dump(2));
  else
    print_text(log, report, j);
  if (!o.plot.empty()) {
    plot(log, o.plot);
    if (!o.json) fmt::print("  plot         {}\n", o.plot.string());
  }
  return report.ok() ? 0 : 1;
}

}  // namespace wit::cli
