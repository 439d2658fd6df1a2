#include "board/entries.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <regex>
#include <set>

#include "board/ids.h"
#include "core/json.h"
#include "verify/certificate.h"
#include "core/fs.h"
#include "record/run_config.h"
#include "core/error.h"
#include "record/format.h"
#include "record/reader.h"

namespace wit::board {

namespace fs = std::filesystem;

namespace {

// The file names a run directory holds that the board takes: nothing else, no paths.
bool allowed_file(const std::string& name) {
  static const std::regex ckpt("checkpoints/step_[0-9]{8}\\.ckpt");
  return name == "witness.h5" || name == "config.yaml" || name == "model.safetensors" ||
         std::regex_match(name, ckpt);
}

nlohmann::json entry_json(const Row& r) {
  return {{"id", r.text(0)},      {"track", r.text(1)},   {"participant", r.text(2)},
          {"name", r.text(3)},    {"head", r.text(4)},    {"steps", r.integer(5)},
          {"status", r.text(6)},  {"created", r.text(7)},
          {"receipt", nlohmann::json::parse(r.text(8))}};
}

const char* kEntryColumns =
    "e.id, e.track, p.name, e.name, e.head, e.steps, e.status, e.created, e.receipt";

// A stretch of a run's trajectory named without its key: the dataset, the model size and the
// steps' fields (each step's record hash with no chain before it, so no genesis and no key). A
// copy of a run re-signed under another key has the same names.
Digest trajectory_hash(const witness::RunMeta& meta, const std::vector<witness::StepRow>& rows,
                       size_t first, size_t count) {
  Sha256 h;
  h.update("wit-trajectory-v1");
  h.update(meta.manifest_root.data(), meta.manifest_root.size());
  h.update(meta.data_layout.data(), meta.data_layout.size());
  h.update_u64(meta.num_params).update_u64(first).update_u64(count);
  for (size_t i = first; i < first + count; ++i) {
    const Digest d = witness::record_hash(Digest{}, rows[i].fields);
    h.update(d.data(), d.size());
  }
  return h.finish();
}

// Runs are compared in blocks of steps on one grid for the whole board, never on a run's own
// segments: those follow train.checkpoint_every, which a copy re-signed with another value would
// change, and no block of it would then be named as the original's are.
constexpr int64_t kTrajectoryBlock = 16;

// The names of a run's blocks, with the first step each covers. The first block is left out when
// there are others: runs that differ only in a setting whose effect starts after step 0 (a
// learning rate, under warmup) may share it honestly.
std::vector<std::pair<int64_t, Digest>> trajectory_blocks(const witness::WitnessLog& log) {
  std::vector<std::pair<int64_t, Digest>> out;
  const auto& rows = log.tables.steps;
  const int64_t n = int64_t(rows.size()), G = kTrajectoryBlock;
  for (int64_t first = n > G ? G : 0; first < n; first += G)
    out.emplace_back(first, trajectory_hash(log.meta, rows, first, std::min(n - first, G)));
  return out;
}

// Refuses a run that shares a block with an entry already on the board, whoever entered it and
// whatever became of it: a computation enters once, under its first receipt.
void refuse_copies(Db& db, const std::vector<std::pair<int64_t, Digest>>& blocks, int64_t steps) {
  for (const auto& [first, digest] : blocks) {
    const auto rows = db.query(
        "SELECT e.id, p.name, e.created FROM board_trajectories t JOIN board_entries e ON "
        "e.id = t.entry JOIN board_participants p ON p.id = e.participant WHERE t.digest = $1",
        {to_hex(digest)});
    if (!rows.empty())
      fail("steps {} to {} of this run are entry {}'s (entered by {} at {}): a run enters the "
           "board once, under whoever entered it first; another run needs its own seed",
           first, std::min(first + kTrajectoryBlock, steps) - 1, rows[0].text(0), rows[0].text(1),
           rows[0].text(2));
  }
}

}  // namespace

void migrate_entries(Db& db) {
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_entries ("
      " id TEXT PRIMARY KEY,"
      " track TEXT NOT NULL,"
      " participant TEXT NOT NULL REFERENCES board_participants(id),"
      " name TEXT NOT NULL,"
      " head TEXT NOT NULL,"
      " steps BIGINT NOT NULL,"
      " files TEXT NOT NULL,"
      " status TEXT NOT NULL,"
      " created TEXT NOT NULL,"
      " receipt TEXT NOT NULL)");
  // Every entry's blocks of steps by their key-independent names (refuse_copies).
  db.exec(
      "CREATE TABLE IF NOT EXISTS board_trajectories ("
      " digest TEXT PRIMARY KEY,"
      " entry TEXT NOT NULL REFERENCES board_entries(id),"
      " first_step BIGINT NOT NULL)");
}

Submission parse_submission(const std::string& body) {
  nlohmann::json j;
  // A key given twice would mean whichever the parser kept: refused, so that what the board
  // records is what the participant wrote.
  std::vector<std::set<std::string>> keys;
  std::string twice;
  const auto key_twice = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& v) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end) keys.pop_back();
    if (event == E::key && !keys.back().insert(v.get<std::string>()).second)
      twice = v.get<std::string>();
    return !twice.empty();
  };
  j = parse_untrusted_json(body, key_twice);
  if (!twice.empty()) fail("the submission gives the key '{}' twice", twice);
  if (j.is_discarded())
    fail("the submission is not JSON (or nests deeper than {} levels)", kMaxJsonDepth);
  if (!j.is_object()) fail("the submission must be a JSON object");
  Submission s;
  for (const char* key : {"track", "name"}) {
    if (!j.contains(key) || !j[key].is_string()) fail("the submission has no string '{}'", key);
  }
  s.track = j["track"];
  s.name = j["name"];
  if (s.name.empty() || s.name.size() > 100 ||
      s.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._-") !=
          std::string::npos)
    fail("entry name '{}': use 1 to 100 letters, digits, spaces, '.', '_' or '-'", s.name);
  if (!j.contains("files") || !j["files"].is_object()) fail("the submission has no object 'files'");
  for (const auto& [name, sha] : j["files"].items()) {
    if (!allowed_file(name))
      fail("file '{}': a submission holds witness.h5, config.yaml, model.safetensors and "
           "checkpoints/step_NNNNNNNN.ckpt only",
           name);
    if (!sha.is_string() || sha.get<std::string>().size() != 64 ||
        sha.get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos)
      fail("file '{}': its SHA-256 must be 64 lowercase hex digits", name);
    s.files[name] = sha;
  }
  for (const char* need : {"witness.h5", "config.yaml", "model.safetensors"})
    if (!s.files.count(need)) fail("the submission has no {}", need);
  return s;
}

nlohmann::json submit_entry(Db& db, const BlobStore& files, const std::vector<Track>& tracks,
                            const witness::SigningKey& board_key, const Participant& p,
                            const Submission& s, const Intake& intake) {
  const Track* track = nullptr;
  for (const Track& t : tracks)
    if (t.id == s.track) track = &t;
  if (!track) fail("no track '{}'", s.track);
  auto uploaded = [&](const std::string& name, const std::string& sha) {
    if (!files.has(digest_from_hex(sha, name)))
      fail("{} ({}) has not been uploaded (PUT /api/files/{})", name, sha.substr(0, 16), sha);
  };
  uploaded("witness.h5", s.files.at("witness.h5"));  // the log first: it says what else is needed
  for (const auto& [name, sha] : s.files) uploaded(name, sha);
  const auto log_path = files.path_of(digest_from_hex(s.files.at("witness.h5"), "witness.h5"));
  witness::WitnessLog log;
  try {
    log = witness::read_log(*log_path);
  } catch (const Error& e) {
    fail("witness.h5 is not a witness log: {}", e.what());
  }
  const witness::LogReport report = witness::check_log(log);
  if (!report.ok()) fail("witness.h5 does not check: {}", report.problems.front().text());
  if (!report.complete || !report.signed_heads || report.signed_steps != report.valid_steps)
    fail("witness.h5: the run is not complete and signed ({} of {} steps signed)",
         report.signed_steps, report.config ? report.config->train.steps : 0);
  {
    // Authorship: the log must be signed by a key this participant proved it holds, so that no
    // one enters a run whose key is not theirs (a published run's files are public).
    std::lock_guard<std::mutex> lock(intake.db_mutex);
    if (!has_trainer_key(db, p.id, log.meta.public_key))
      fail("witness.h5 is signed by trainer key {} ({}), which participant {} has not registered: "
           "register it with `wit board register-key --key PRIVATE_KEY` (wit board submit does so "
           "when it holds the key)",
           witness::key_id(log.meta.public_key),
           to_hex(log.meta.public_key.data(), log.meta.public_key.size()), p.name);
  }
  const std::vector<std::string> problems = entry_problems(*track, log.meta);
  if (!problems.empty())
    fail("the run may not enter {}: {}", track->id, fmt::format("{}", fmt::join(problems, "; ")));
  std::set<std::string> committed;
  for (const auto& row : log.tables.checkpoints) {
    const std::string name = witness::checkpoint_file_name(row.fields.step);
    if (!s.files.count(name)) fail("the log commits to {}, which the submission lacks", name);
    committed.insert(name);
  }
  for (const auto& [name, sha] : s.files)
    if (name.rfind("checkpoints/", 0) == 0 && !committed.count(name))
      fail("{} is not a checkpoint the log commits to: a submission holds the run's files only", name);
  // config.yaml (what `wit train --resume` and people read) must be the config the log committed
  // to, give or take the settings that may change on resume.
  {
    const auto cfg_path = files.path_of(digest_from_hex(s.files.at("config.yaml"), "config.yaml"));
    std::string problem;
    try {
      const config::Config uploaded =
          config::Config::parse(read_text_file(*cfg_path), "config.yaml", run_schema());
      if (uploaded.get_string("model.attention") == "auto")
        problem = "model.attention is auto, which a finished run never has";
      else if (committed_yaml(uploaded) != log.meta.committed_yaml)
        problem = "its trajectory settings differ from the config the log committed to";
    } catch (const Error& e) {
      problem = e.what();
    }
    if (!problem.empty()) fail("config.yaml is not the run's config: {}", problem);
  }
  const RunConfig& rc = *report.config;
  const int64_t steps = int64_t(report.valid_steps);
  if (log.tables.checkpoints.empty() || int64_t(log.tables.checkpoints.back().fields.step) != steps)
    fail("the log commits to no checkpoint after its last step {}: the published model cannot be "
         "checked",
         steps);
  const witness::EvalRow* final_eval = nullptr;
  for (const auto& e : log.tables.evals)
    if (int64_t(e.fields.step) == steps && e.fields.split == "val" && e.fields.metric == "loss")
      final_eval = &e;
  if (!final_eval) fail("the log has no final val loss (after step {}) to rank the run by", steps);

  // The facts the certificate states, all from the signed log and the files' hashes.
  EntryFacts facts;
  const witness::Heads& head = *report.signed_heads;
  facts.certificate_fields =
      witness::run_identity(log, head, log.tables.checkpoints.back().fields.state_hash);
  facts.certificate_fields["model_sha256"] = s.files.at("model.safetensors");
  facts.steps = steps;
  facts.segment_steps = rc.train.checkpoint_every > 0 ? std::min(rc.train.checkpoint_every, steps) : steps;
  facts.segments = (steps + facts.segment_steps - 1) / facts.segment_steps;
  facts.val_loss = final_eval->fields.value;
  facts.params = int64_t(log.meta.num_params);
  facts.tokens = rc.training_tokens();
  for (const auto& c : log.tables.checkpoints)
    if (const int64_t step = int64_t(c.fields.step); step < steps && step % facts.segment_steps != 0)
      facts.committed_inside.push_back(step);

  // A copy is refused before the audit reads every checkpoint: resubmitting a run must not cost
  // the board an audit (checked again below, with the entry's insertion, under the lock).
  const auto blocks = trajectory_blocks(log);
  {
    std::lock_guard<std::mutex> lock(intake.db_mutex);
    refuse_copies(db, blocks, facts.steps);
  }

  // The cheap stages at once, on the board's own copies of the files and of the dataset.
  const auto data = intake.datasets.find(to_hex(track->manifest_root), to_hex(track->data_layout));
  if (!data) fail("this board holds no copy of track {}'s dataset, so it takes no entries", track->id);
  const fs::path dir = intake.work_dir / ("audit-" + random_hex(8));
  ReplayResult audit;
  try {
    link_run(files, s.files, dir);
    audit = intake.checks.audit(dir, *data);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw;
  }
  fs::remove_all(dir);
  // From the board's own dataset, never the submitter's files: how its records name documents.
  if (audit.dataset.is_object()) facts.certificate_fields["dataset"] = audit.dataset;

  const std::string head_hex = to_hex(witness::head_hash(head));
  const std::string id = random_hex(8), created = utc_now();
  nlohmann::json receipt = {{"board_key", to_hex(board_key.public_key())},
                            {"entry", id},
                            {"track", track->id},
                            {"participant", p.name},
                            {"name", s.name},
                            {"head", head_hex},
                            {"steps", report.signed_steps},
                            {"files", s.files},
                            {"received", created}};
  const witness::Signature sig = board_key.sign("wit-board-receipt-v1" + receipt.dump());
  receipt["signature"] = to_hex(sig.data(), sig.size());
  std::lock_guard<std::mutex> lock(intake.db_mutex);
  JobQueue q(db, intake.policy, board_key);
  db.transaction([&] {
    // The board drops a file no entry used for days (board/site.cpp): one that went while the
    // run was audited is refused here, under the lock that drops files, never entered missing.
    for (const auto& [name, sha] : s.files)
      if (!files.has(digest_from_hex(sha, name)))
        fail("{} ({}) left the file store while the run was audited (a file no entry uses is "
             "dropped days after it was uploaded): upload it again",
             name, sha.substr(0, 16));
    refuse_copies(db, blocks, facts.steps);
    db.exec(
        "INSERT INTO board_entries (id, track, participant, name, head, steps, files, status, "
        "created, receipt) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        {id, track->id, p.id, s.name, head_hex, int64_t(report.signed_steps),
         nlohmann::json(s.files).dump(), std::string("verifying"), created, receipt.dump()});
    for (const auto& [first, digest] : blocks)
      db.exec("INSERT INTO board_trajectories (digest, entry, first_step) VALUES ($1, $2, $3)",
              {to_hex(digest), id, first});
    q.record(id, facts, audit);
    // Its files are an entry's now: no participant's upload quota counts them any more. Their
    // rows are expired at once, so the next sweep (board/site.cpp) drops them and any spare
    // unfinished bytes of them a participant still holds, and never the files themselves.
    for (const auto& [name, sha] : s.files)
      db.exec("UPDATE board_uploads SET began = $2 WHERE sha256 = $1",
              {sha, std::string("1970-01-01T00:00:00Z")});
  });
  // Drawn only now that the entry is committed: nothing it holds can steer the draws.
  q.schedule(id);
  nlohmann::json out = *entry_by_id(db, id);
  out["verification"] = q.verification(id, false);
  return out;
}

std::vector<nlohmann::json> track_entries(Db& db, const std::string& track) {
  std::vector<nlohmann::json> out;
  for (const Row& r : db.query(fmt::format("SELECT {} FROM board_entries e JOIN board_participants p "
                                           "ON p.id = e.participant WHERE e.track = $1 "
                                           "ORDER BY e.created DESC, e.id",
                                           kEntryColumns),
                               {track}))
    out.push_back(entry_json(r));
  return out;
}

std::optional<nlohmann::json> entry_by_id(Db& db, const std::string& id) {
  const auto rows = db.query(fmt::format("SELECT {} FROM board_entries e JOIN board_participants p "
                                         "ON p.id = e.participant WHERE e.id = $1",
                                         kEntryColumns),
                             {id});
  if (rows.empty()) return std::nullopt;
  return entry_json(rows[0]);
}

}  // namespace wit::board
