// What `wit inspect` says about a log (record/summary.h).
#include "record/summary.h"

#include <fmt/format.h>

#include <iterator>

#include "core/json.h"

namespace wit::witness {

using nlohmann::json;

namespace {

std::string short_hex(const Digest& d) { return to_hex(d).substr(0, 16); }

}  // namespace

json log_summary(const WitnessLog& log, const LogReport& r) {
  const auto& t = log.tables;
  const auto& m = log.meta;
  uint64_t tokens = 0;
  for (auto& s : t.steps) tokens += s.fields.tokens;
  json j;
  j["log"] = log.path.string();
  j["schema_version"] = kSchemaVersion;
  j["num_params"] = m.num_params;
  j["manifest_root"] = to_hex(m.manifest_root);
  j["genesis"] = to_hex(log.genesis);
  j["key_id"] = key_id(m.public_key);
  j["public_key"] = to_hex(m.public_key.data(), m.public_key.size());
  j["total_steps"] = r.config ? json(r.config->train.steps) : json(nullptr);
  j["committed_yaml"] = m.committed_yaml;
  j["steps"] = t.steps.size();
  j["complete"] = r.complete;
  j["tokens"] = tokens;
  j["head"] = t.steps.empty() ? to_hex(log.genesis) : to_hex(t.steps.back().hash);
  // Every table's last row hash: equal heads mean equal tables, row for row.
  const Heads h = heads_of(log.genesis, t, t.steps.size(), t.fingerprints.size(),
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
                     {"path", checkpoint_file_name(c.fields.step)}});
  j["checkpoints"] = ckpts;
  j["fingerprints"] = t.fingerprints.size();
  j["fingerprint_every"] = r.config ? json(r.config->witness.fingerprint_every) : json(nullptr);
  if (r.signed_heads)
    j["signed_head"] = {{"hash", to_hex(head_hash(*r.signed_heads))},
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
  auto sessions = parse_untrusted_json(m.sessions_json);
  j["sessions"] = sessions.is_array() ? sessions : json::array();
  json superseded = json::array();
  for (auto& [group, tables] : log.superseded)
    superseded.push_back({{"group", group}, {"steps", tables.steps.size()}});
  j["superseded"] = superseded;
  return j;
}

std::string summary_text(const WitnessLog& log, const LogReport& r, const std::string& name) {
  const json j = log_summary(log, r);
  const auto& t = log.tables;
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "witness log {} (schema {})\n", name.empty() ? log.path.string() : name,
                 kSchemaVersion);
  fmt::format_to(to, "  model        {:.2f}M parameters, dataset {}, key {}\n",
                 double(log.meta.num_params) / 1e6, short_hex(log.meta.manifest_root),
                 j["key_id"].get<std::string>());
  fmt::format_to(to, "  steps        {} of {}{}, {} tokens\n", t.steps.size(),
                 r.config ? std::to_string(r.config->train.steps) : std::string("?"),
                 r.complete ? " (complete)" : "", j["tokens"].get<uint64_t>());
  if (!t.steps.empty())
    fmt::format_to(to, "  last loss    {:.4f} (step {})\n", t.steps.back().fields.loss,
                   t.steps.back().fields.step);
  const EvalRow *val = nullptr, *acc = nullptr, *acc_norm = nullptr;
  size_t evaluations = 0;
  for (auto& e : t.evals) {
    const bool is_val = e.fields.split == "val" && e.fields.metric == "loss";
    evaluations += is_val;
    if (is_val) val = &e;
    if (e.fields.split == "choice" && e.fields.metric == "acc") acc = &e;
    if (e.fields.split == "choice" && e.fields.metric == "acc_norm") acc_norm = &e;
  }
  if (val)
    fmt::format_to(to, "  val loss     {:.4f} (after {} steps; {} evaluations)\n",
                   val->fields.value, val->fields.step, evaluations);
  if (acc && acc_norm)
    fmt::format_to(to, "  choice       acc_norm {:.4f}, acc {:.4f} (after {} steps)\n",
                   acc_norm->fields.value, acc->fields.value, acc_norm->fields.step);
  fmt::format_to(to, "  fingerprints {} (every {} steps)\n", t.fingerprints.size(),
                 j["fingerprint_every"].dump());
  if (t.checkpoints.empty())
    fmt::format_to(to, "  checkpoints  none\n");
  else
    fmt::format_to(to, "  checkpoints  {}, the last after {} steps: {} (state {})\n",
                   t.checkpoints.size(), t.checkpoints.back().fields.step,
                   checkpoint_file_name(t.checkpoints.back().fields.step),
                   short_hex(t.checkpoints.back().fields.state_hash));
  if (r.ok())
    fmt::format_to(to, "  chain        valid: {} records, head {}\n", r.valid_steps,
                   j["head"].get<std::string>().substr(0, 16));
  else
    fmt::format_to(to, "  chain        FAILS: valid through {} records; {} problem(s)\n",
                   r.valid_steps, r.problems.size());
  fmt::format_to(to, "  signatures   {} of {} valid, covering {} steps\n", r.signatures_valid,
                 t.signatures.size(), r.signed_steps);
  // In full: what a proof's checker is given (wit query --check-proof --root --genesis --head).
  fmt::format_to(to, "  root         {}\n  genesis      {}\n", to_hex(log.meta.manifest_root),
                 to_hex(log.genesis));
  if (j.contains("signed_head"))
    fmt::format_to(to, "  signed head  {}\n", j["signed_head"]["hash"].get<std::string>());
  const auto& sessions = j["sessions"];
  std::string worlds;
  // Unsigned text the trainer wrote: fields of another type are left out, never thrown on.
  for (auto& s : sessions) {
    const json ws = s.is_object() ? s.value("world_size", json()) : json();
    if (!ws.is_number_integer()) continue;
    const json mode = s.value("dist_mode", json()), recompute = s.value("activation_checkpointing", json());
    worlds += (worlds.empty() ? "" : ", ") + std::to_string(ws.get<int64_t>()) + " " +
              (mode.is_string() ? mode.get<std::string>() : std::string("?")) +
              (recompute.is_boolean() && recompute.get<bool>() ? " recomputing activations" : "");
  }
  fmt::format_to(to, "  sessions     {} (world size: {})\n", sessions.size(), worlds);
  for (auto& p : r.problems) fmt::format_to(to, "  PROBLEM      {}\n", p.text());
  for (auto& n : r.notes) fmt::format_to(to, "  note         {}\n", n);
  return out;
}

}  // namespace wit::witness
