#include "record/reader.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/h5.h"
#include "core/json.h"
#include "record/tables_io.h"

namespace wit::witness {

std::string Finding::text() const {
  std::string where = table;
  if (row >= 0) where += fmt::format(" row {}", row);
  if (!field.empty()) where += ", field " + field;
  return where + ": " + message;
}

namespace {

// Every group, dataset and attribute schema 2 does not define.
void find_unknown(const h5::File& f, WitnessLog& log) {
  auto unknown = [&](const std::string& where, const std::string& what) {
    log.unknown.push_back({where, -1, what, "is not part of the witness log's schema 2"});
  };
  for (auto& a : f.attribute_names())
    if (a != "format" && a != "schema_version") unknown("/", "attribute " + a);
  const auto& meta_attrs = io::meta_attributes();
  auto check_tables = [&](const h5::Group& g, const std::string& prefix) {
    for (auto& name : g.member_names()) {
      const std::string where = prefix + name;
      const auto& columns = io::table_columns(name);
      if (columns.empty() || !g.is_group(name)) {
        if (prefix.empty() && (name == "meta" || name == "superseded")) continue;
        unknown(where, "");
        continue;
      }
      const h5::Group table = g.open_group(name);
      for (auto& a : table.attribute_names()) unknown(where, "attribute " + a);
      for (auto& c : table.member_names()) {
        if (std::find(columns.begin(), columns.end(), c) == columns.end() || table.is_group(c)) {
          unknown(where + "/" + c, "");
          continue;
        }
        for (auto& a : table.open_dataset(c).attribute_names())
          unknown(where + "/" + c, "attribute " + a);
      }
    }
  };
  check_tables(f, "");
  if (f.exists("meta")) {
    const h5::Group meta = f.open_group("meta");
    for (auto& a : meta.attribute_names())
      if (std::find(meta_attrs.begin(), meta_attrs.end(), a) == meta_attrs.end())
        unknown("meta", "attribute " + a);
    for (auto& m : meta.member_names()) unknown("meta/" + m, "");
  }
  if (f.exists("superseded")) {
    const h5::Group sup = f.open_group("superseded");
    for (auto& a : sup.attribute_names()) unknown("superseded", "attribute " + a);
    for (uint64_t k = 1;; ++k) {
      const std::string name = std::to_string(k);
      if (!sup.exists(name)) {
        for (auto& m : sup.member_names())
          // Only "1" to "k-1", as written: "0", "01" or 30 digits are never read, so unknown.
          if (m.empty() || m.size() > 19 || m[0] == '0' ||
              m.find_first_not_of("0123456789") != std::string::npos || std::stoull(m) >= k)
            unknown("superseded/" + m, "");
        break;
      }
      const h5::Group g = sup.open_group(name);
      for (auto& a : g.attribute_names())
        if (a != "reason") unknown("superseded/" + name, "attribute " + a);
      check_tables(g, "superseded/" + name + "/");
    }
  }
}

}  // namespace

WitnessLog read_log(const std::filesystem::path& file) {
  h5::File f = h5::File::open_read_live(file);
  const std::string name = file.string();
  // Every column is read once, so a log's reads fit in its size (twice, for slack): more means
  // data linked from many places, such as superseded sessions that are all one group.
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(file, ec);
  h5::ReadBudget budget(2 * std::max<uint64_t>(ec ? 0 : size, uint64_t(1) << 20));
  if (!f.has_attr("format") || f.string_attr("format") != kFormatName)
    fail("{} is not a witness log (its root has no format = \"{}\" attribute)", name, kFormatName);
  const int64_t version = f.int_attr("schema_version");
  if (version != kSchemaVersion)
    fail(
        "{} has witness schema version {}, which this build of wit does not know (it reads "
        "version {}){}",
        name, version, kSchemaVersion, version > kSchemaVersion ? ": upgrade wit" : "");
  WitnessLog log;
  log.path = file;
  log.meta = io::read_meta(f, log.genesis);
  log.tables = io::read_tables(f, "", log.incomplete);
  if (f.exists("superseded")) {
    for (uint64_t k = 1;; ++k) {
      const std::string g = fmt::format("superseded/{}", k);
      if (!f.exists(g)) break;
      log.superseded.emplace_back(g, io::read_tables(f, g + "/", log.incomplete));
    }
  }
  find_unknown(f, log);
  return log;
}

std::filesystem::path dataset_hint(const WitnessLog& log) {
  const auto sessions = parse_untrusted_json(log.meta.sessions_json);
  if (!sessions.is_array() || sessions.empty() || !sessions.back().is_object()) return {};
  const auto& last = sessions.back();
  if (!last.contains("data_dir") || !last["data_dir"].is_string()) return {};
  return last["data_dir"].get<std::string>();
}

Heads heads_of(const Digest& genesis, const Tables& t, uint64_t steps, uint64_t fingerprints,
               uint64_t checkpoints, uint64_t evals) {
  Heads h;
  h.genesis = genesis;
  h.steps = steps;
  h.fingerprints = fingerprints;
  h.checkpoints = checkpoints;
  h.evals = evals;
  h.step_head = steps ? t.steps[steps - 1].hash : genesis;
  h.fingerprint_head = fingerprints ? t.fingerprints[fingerprints - 1].hash : genesis;
  h.checkpoint_head = checkpoints ? t.checkpoints[checkpoints - 1].hash : genesis;
  h.eval_head = evals ? t.evals[evals - 1].hash : genesis;
  return h;
}

namespace {

// Checks one side table: steps in order, anchored to the step chain, rows chained.
template <typename Row, typename HashFn>
uint64_t check_side_table(const char* table, const std::vector<Row>& rows,
                          const std::vector<StepRow>& steps, uint64_t valid_steps,
                          const Digest& genesis, HashFn hash_of, LogReport& report) {
  Digest prev = genesis;
  uint64_t last_step = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    auto problem = [&](const char* field, std::string msg) {
      report.problems.push_back({table, int64_t(i), field, std::move(msg)});
    };
    const uint64_t s = r.fields.step;
    if (s < last_step)
      return problem("step", fmt::format("step {} comes after step {}: rows are out of order", s,
                                         last_step)),
             i;
    last_step = s;
    if (s > valid_steps)
      return problem("step", fmt::format("refers to step {} but the step chain verifies only "
                                         "through {} steps",
                                         s, valid_steps)),
             i;
    const Digest anchor = s == 0 ? genesis : steps[s - 1].hash;
    if (r.anchor != anchor)
      return problem("anchor", fmt::format("does not match the record hash after step {}", s)), i;
    if (r.prev != prev)
      return problem("prev_hash",
                     "does not match the previous row's row_hash (a row was removed, "
                     "inserted or reordered)"),
             i;
    if (hash_of(prev, anchor, r.fields) != r.hash)
      return problem("row_hash", "does not match the row's fields (a hashed field was changed)"), i;
    prev = r.hash;
  }
  return rows.size();
}

// Each evaluation is the committed rows (RunConfig::eval_rows) in order, all after one step;
// returns the evaluations' steps. A run in progress may lack its last evaluation's later rows.
std::vector<uint64_t> eval_steps(const RunConfig& rc, const std::vector<EvalRow>& rows,
                                 LogReport& report) {
  const std::vector<EvalRowName> names = rc.eval_rows();
  auto rule = [&] {
    std::string r;
    for (auto& n : names) r += fmt::format("{}'{}' '{}'", r.empty() ? "" : ", ", n.split, n.metric);
    return r;
  };
  std::vector<uint64_t> steps;
  for (size_t i = 0; i < rows.size(); ++i) {
    const EvalFields& e = rows[i].fields;
    const EvalRowName& want = names[i % names.size()];
    if (e.split != want.split || e.metric != want.metric) {
      report.problems.push_back(
          {"evals", int64_t(i), e.split != want.split ? "split" : "metric",
           fmt::format("is '{}' '{}' where the committed config gives '{}' '{}' (each "
                       "evaluation's rows: {})",
                       e.split, e.metric, want.split, want.metric, rule())});
      return steps;
    }
    if (i % names.size() == 0) {
      steps.push_back(e.step);
    } else if (e.step != rows[i - 1].fields.step) {
      report.problems.push_back(
          {"evals", int64_t(i), "step",
           fmt::format("step {} in the evaluation after step {}: its rows share one step", e.step,
                       rows[i - 1].fields.step)});
      return steps;
    }
  }
  if (report.complete && rows.size() % names.size() != 0)
    report.problems.push_back(
        {"evals", int64_t(rows.size()), "split",
         fmt::format("the evaluation after step {} lacks rows (each evaluation's rows: {})",
                     rows.back().fields.step, rule())});
  return steps;
}

// The side tables hold exactly the rows the committed schedules give, in order: fingerprints
// after every witness.fingerprint_every steps and after the last; val loss evaluations after
// every train.eval_every steps (when not 0) and after the last; checkpoints after every
// train.checkpoint_every steps (when not 0) and after the last, plus any a run stopped early
// (--until) wrote, each at most once. A run still in progress may lack its latest rows.
void check_schedules(const RunConfig& rc, const Tables& t, LogReport& report) {
  const uint64_t total = uint64_t(rc.train.steps);
  auto on = [total](uint64_t every, uint64_t s) {
    return RunConfig::on_schedule(int64_t(every), int64_t(s), int64_t(total));
  };
  // `stride`: rows per scheduled entry (an evaluation's rows share its step).
  auto check = [&](const char* table, const std::vector<uint64_t>& steps, uint64_t every,
                   bool extras_allowed, const char* schedule, size_t stride = 1) {
    uint64_t expected = 0;  // the next step the schedule wants a row for
    auto next_after = [&](uint64_t s) {
      uint64_t n = every > 0 ? (s / every + 1) * every : total;
      return std::min(n, total);
    };
    expected = next_after(0);
    for (size_t i = 0; i < steps.size(); ++i) {
      const uint64_t s = steps[i];
      auto problem = [&](std::string msg) {
        report.problems.push_back({table, int64_t(i * stride), "step", std::move(msg)});
      };
      if (i > 0 && s <= steps[i - 1])
        return problem(fmt::format("step {} comes after step {}: a duplicate or out-of-order row",
                                   s, steps[i - 1]));
      if (s == 0 || s > total)
        return problem(fmt::format("step {} is outside the run's {} steps", s, total));
      if (!on(every, s) && !extras_allowed)
        return problem(fmt::format("a row after step {} is not on the committed schedule ({})",
                                   s, schedule));
      if (s > expected)
        return problem(fmt::format("the row after step {} is missing ({})", expected, schedule));
      if (s == expected) expected = next_after(s);
    }
    if (report.complete && expected <= total && !(steps.size() && steps.back() == total))
      report.problems.push_back(
          {table, -1, "step",
           fmt::format("the row after step {} is missing ({})", expected, schedule)});
  };
  auto steps_of = [](const auto& rows) {
    std::vector<uint64_t> out;
    for (auto& r : rows) out.push_back(r.fields.step);
    return out;
  };
  const uint64_t fe = uint64_t(rc.witness.fingerprint_every);
  const uint64_t ee = uint64_t(rc.train.eval_every);
  const uint64_t ce = uint64_t(rc.train.checkpoint_every);
  check("fingerprints", steps_of(t.fingerprints), fe, false,
        fmt::format("witness.fingerprint_every = {} and after the last step", fe).c_str());
  check("evals", eval_steps(rc, t.evals, report), ee, false,
        fmt::format("train.eval_every = {} and after the last step", ee).c_str(),
        rc.eval_rows().size());
  check("checkpoints", steps_of(t.checkpoints), ce, true,
        fmt::format("train.checkpoint_every = {} and after the last step", ce).c_str());
  for (size_t i = 0; i < t.fingerprints.size(); ++i)
    if (t.fingerprints[i].fields.mean_logprob.size() != uint64_t(rc.witness.probe_sequences)) {
      report.problems.push_back(
          {"fingerprints", int64_t(i), "mean_logprob",
           fmt::format("holds {} values but witness.probe_sequences is {}",
                       t.fingerprints[i].fields.mean_logprob.size(), rc.witness.probe_sequences)});
      break;
    }
}

}  // namespace

LogReport check_log(const WitnessLog& log, const std::optional<PublicKey>& trusted_key) {
  LogReport report;
  const Tables& t = log.tables;
  const Digest genesis = log.meta.genesis();
  for (auto& f : log.incomplete) report.notes.push_back(f.text());
  if (genesis != log.genesis) {
    report.problems.push_back({"meta", -1, "genesis",
                               "does not match the hash of committed_yaml, manifest_root, "
                               "data_layout, num_params and public_key (the run's commitments "
                               "were changed)"});
    return report;
  }
  for (auto& u : log.unknown) report.problems.push_back(u);
  try {
    report.config = run_config_from(parse_committed(log.meta.committed_yaml, "/meta committed_yaml"));
  } catch (const Error& e) {
    report.problems.push_back({"meta", -1, "committed_yaml", e.what()});
  }

  // The step chain.
  Digest prev = genesis;
  uint64_t valid = 0;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    const StepRow& r = t.steps[i];
    auto problem = [&](const char* field, std::string msg) {
      report.problems.push_back({"steps", int64_t(i), field, std::move(msg)});
    };
    if (r.fields.step != i) {
      problem("step", fmt::format("is {}, expected {} (steps were removed, inserted or reordered)",
                                  r.fields.step, i));
      break;
    }
    if (r.prev != prev) {
      problem("prev_hash", i == 0 ? std::string("does not match the genesis hash")
                                  : fmt::format("does not match step {}'s record_hash", i - 1));
      break;
    }
    if (record_hash(prev, r.fields) != r.hash) {
      problem("record_hash", "does not match the row's fields (a hashed field was changed)");
      break;
    }
    prev = r.hash;
    valid = i + 1;
  }
  report.valid_steps = valid;
  const uint64_t total = report.config ? uint64_t(report.config->train.steps) : 0;
  report.complete = report.config && valid == total;
  if (report.config && t.steps.size() > total)
    report.problems.push_back({"steps", int64_t(total), "step",
                               fmt::format("the run has {} steps (train.steps) but the log holds "
                                           "{} rows",
                                           total, t.steps.size())});

  const uint64_t fingerprints =
      check_side_table("fingerprints", t.fingerprints, t.steps, valid, genesis, fingerprint_hash, report);
  const uint64_t ckpts = check_side_table("checkpoints", t.checkpoints, t.steps, valid, genesis,
                                          checkpoint_hash, report);
  const uint64_t evals =
      check_side_table("evals", t.evals, t.steps, valid, genesis, eval_hash, report);

  if (report.config) check_schedules(*report.config, t, report);

  // Signatures: each covers a prefix of every table.
  const std::string run_key = key_id(log.meta.public_key);
  Heads last_signed;
  size_t last_signed_row = 0;
  for (size_t i = 0; i < t.signatures.size(); ++i) {
    const SignatureRow& s = t.signatures[i];
    auto problem = [&](const char* field, std::string msg) {
      report.problems.push_back({"signatures", int64_t(i), field, std::move(msg)});
    };
    const Heads& h = s.heads;
    if (h.steps > t.steps.size() || h.fingerprints > t.fingerprints.size() ||
        h.checkpoints > t.checkpoints.size() || h.evals > t.evals.size()) {
      problem("steps", fmt::format("covers {} steps, {} fingerprints, {} checkpoints and {} evals "
                                   "but the log holds {}, {}, {} and {}: rows were removed",
                                   h.steps, h.fingerprints, h.checkpoints, h.evals, t.steps.size(),
                                   t.fingerprints.size(), t.checkpoints.size(), t.evals.size()));
      continue;
    }
    if (h.steps > valid || h.fingerprints > fingerprints || h.checkpoints > ckpts || h.evals > evals) {
      problem("steps", "covers rows that fail verification (see the problems above)");
      continue;
    }
    if (head_hash(heads_of(genesis, t, h.steps, h.fingerprints, h.checkpoints, h.evals)) != s.head) {
      problem("head", "does not match the heads of the rows it covers");
      continue;
    }
    if (s.public_key != log.meta.public_key) {
      problem("public_key", fmt::format("signed by key {}, but the run's key (in /meta) is {}",
                                        key_id(s.public_key), run_key));
      continue;
    }
    if (trusted_key && s.public_key != *trusted_key) {
      problem("public_key", fmt::format("signed by key {}, not by the trusted key {}",
                                        key_id(s.public_key), key_id(*trusted_key)));
      continue;
    }
    if (!verify_signature(s.public_key, signed_message(s.head), s.signature)) {
      problem("signature", fmt::format("is not a valid Ed25519 signature of the head by key {}",
                                       key_id(s.public_key)));
      continue;
    }
    // Each signature covers at least what the one before it did. The last one says where the
    // run stands (wit query's answers end there), so an earlier head signed again after a later
    // one would set that back.
    if (report.signatures_valid > 0 &&
        (h.steps < last_signed.steps || h.fingerprints < last_signed.fingerprints ||
         h.checkpoints < last_signed.checkpoints || h.evals < last_signed.evals)) {
      problem("steps",
              fmt::format("covers {} steps, {} fingerprints, {} checkpoints and {} evals, less than "
                          "signatures row {} before it ({}, {}, {} and {}): an earlier head signed "
                          "again",
                          h.steps, h.fingerprints, h.checkpoints, h.evals, last_signed_row,
                          last_signed.steps, last_signed.fingerprints, last_signed.checkpoints,
                          last_signed.evals));
      continue;
    }
    ++report.signatures_valid;
    last_signed_row = i;
    report.signed_steps = std::max(report.signed_steps, h.steps);
    last_signed = h;
    report.signed_heads = heads_of(genesis, t, h.steps, h.fingerprints, h.checkpoints, h.evals);
  }
  if (t.signatures.empty())
    report.notes.push_back("no signatures: the run stopped before its first one");
  const bool all_signed = last_signed.steps == valid && last_signed.fingerprints == fingerprints &&
                          last_signed.checkpoints == ckpts && last_signed.evals == evals;
  if (report.ok() && !all_signed) {
    if (report.complete)
      report.problems.push_back(
          {"signatures", -1, "",
           fmt::format("the run is complete ({} steps) but its last signature covers {} steps, "
                       "{} of {} fingerprints, {} of {} checkpoints and {} of {} evals: rows were "
                       "added after it was signed",
                       valid, last_signed.steps, last_signed.fingerprints, fingerprints,
                       last_signed.checkpoints, ckpts, last_signed.evals, evals)});
    else if (report.signed_steps < valid)
      report.notes.push_back(
          fmt::format("{} not signed yet (signatures come with checkpoints and at the end)",
                      report.signed_steps + 1 == valid
                          ? fmt::format("step {} is", report.signed_steps)
                          : fmt::format("steps {} to {} are", report.signed_steps, valid - 1)));
  }
  for (auto& [group, tables] : log.superseded)
    report.notes.push_back(fmt::format(
        "{}: {} step(s) from an interrupted session, replaced on resume (kept, outside the "
        "chain)",
        group, tables.steps.size()));
  return report;
}

}  // namespace wit::witness
