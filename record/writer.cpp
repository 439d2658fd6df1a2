#include "record/writer.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/error.h"
#include "core/json.h"

namespace wit::witness {

namespace fs = std::filesystem;

namespace {

bool same_counts(const Heads& a, const Heads& b) {
  return a.steps == b.steps && a.fingerprints == b.fingerprints && a.checkpoints == b.checkpoints &&
         a.evals == b.evals;
}

}  // namespace

void write_log_file(const fs::path& file, const RunMeta& meta, const Tables& main,
                    const std::vector<std::pair<std::string, Tables>>& superseded) {
  const fs::path tmp = file.string() + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  const uint64_t fingerprint_width = uint64_t(
      run_config_from(parse_committed(meta.committed_yaml, "the run's committed config"))
          .witness.probe_sequences);
  try {
    h5::File f = h5::File::create_live(tmp);
    io::write_meta(f, meta);
    io::TableColumns c = io::create_tables(f, "", fingerprint_width);
    io::append_all(c, main);
    for (auto& [group, tables] : superseded) {
      io::TableColumns s = io::create_tables(f, group + "/", fingerprint_width);
      io::append_all(s, tables);
      f.open_group(group).set_string_attr(
          "reason", "rows of an interrupted session, past the checkpoint a resume continued from");
    }
    f.flush();
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, file, ec);
  if (ec) fail("cannot move {} into place as {}: {}", tmp.string(), file.string(), ec.message());
}

LogWriter::LogWriter(const fs::path& file, SigningKey key, const Heads& heads,
                     const SignatureRow* last_signature)
    : path_(file),
      key_(std::move(key)),
      file_(h5::File::open_live_write(file)),
      columns_(io::open_tables(file_, "")),
      heads_(heads) {
  if (last_signature) {
    signed_ = last_signature->heads;
    any_signature_ = true;
  }
}

LogWriter LogWriter::create(const fs::path& file, const RunMeta& meta, SigningKey key) {
  if (fs::exists(file))
    fail("{} already exists: a new run does not overwrite a witness log", file.string());
  if (key.public_key() != meta.public_key)
    fail("internal: the log's /meta names another key than the one signing it");
  write_log_file(file, meta, {}, {});
  Heads h = heads_of(meta.genesis(), {}, 0, 0, 0, 0);
  LogWriter w(file, std::move(key), h, nullptr);
  w.sign();
  return w;
}

LogWriter LogWriter::resume(const fs::path& file, const RunMeta& meta, SigningKey key,
                            const ResumePoint& at) {
  if (!fs::exists(file))
    fail(
        "{} is missing: a witnessed run cannot continue without its log (the chain would "
        "restart with no link to the steps already trained)",
        file.string());
  WitnessLog old = read_log(file);
  const std::string name = file.string();
  if (old.meta.public_key != key.public_key())
    fail("{} is signed by key {}, but the key given is {}: resume with the run's key (--key)", name,
         key_id(old.meta.public_key), key_id(key.public_key()));
  if (old.meta.genesis() != meta.genesis())
    fail(
        "{} belongs to another run: its genesis {} differs from this run's {} (the committed "
        "config, the dataset or the model changed)",
        name, to_hex(old.meta.genesis()), to_hex(meta.genesis()));
  const uint64_t c = at.steps_done;
  const Tables& t = old.tables;
  if (t.steps.size() < c)
    fail(
        "{} records {} steps but the checkpoint is after {}: the log lost steps the checkpoint "
        "holds",
        name, t.steps.size(), c);

  // Keep what happened up to the checkpoint; the rest is superseded.
  Tables kept, gone;
  kept.steps.assign(t.steps.begin(), t.steps.begin() + long(c));
  gone.steps.assign(t.steps.begin() + long(c), t.steps.end());
  auto split = [c](const auto& rows, auto& keep, auto& drop) {
    for (auto& r : rows) (r.fields.step <= c ? keep : drop).push_back(r);
  };
  split(t.fingerprints, kept.fingerprints, gone.fingerprints);
  split(t.checkpoints, kept.checkpoints, gone.checkpoints);
  split(t.evals, kept.evals, gone.evals);
  for (auto& s : t.signatures) {
    const Heads& h = s.heads;
    const bool covered = h.steps <= kept.steps.size() && h.fingerprints <= kept.fingerprints.size() &&
                         h.checkpoints <= kept.checkpoints.size() && h.evals <= kept.evals.size();
    (covered ? kept.signatures : gone.signatures).push_back(s);
  }

  WitnessLog check = old;
  check.tables = kept;
  check.superseded.clear();
  check.incomplete.clear();
  LogReport report = check_log(check);
  if (!report.ok())
    fail("{} does not verify up to the checkpoint after step {}: {}", name, c,
         report.problems.front().text());

  if (c > 0) {
    if (kept.steps[c - 1].fields.weight_fingerprint != at.weights)
      fail(
          "checkpoint {} does not match {}: its weights' fingerprint differs from the one "
          "recorded after step {}",
          checkpoint_file_name(c), name, c - 1);
    const CheckpointRow* row = nullptr;
    for (auto& r : kept.checkpoints)
      if (r.fields.step == c) row = &r;
    if (row && row->fields.state_hash != at.checkpoint.state_hash)
      fail("checkpoint {} has state hash {} but {} recorded {} for step {}", checkpoint_file_name(c),
           to_hex(at.checkpoint.state_hash), name, to_hex(row->fields.state_hash), c);
    if (!row) {
      // Interrupted between writing the checkpoint and recording it: record it now.
      CheckpointRow r;
      r.fields = at.checkpoint;
      r.anchor = kept.steps[c - 1].hash;
      r.prev = kept.checkpoints.empty() ? meta.genesis() : kept.checkpoints.back().hash;
      r.hash = checkpoint_hash(r.prev, r.anchor, r.fields);
      kept.checkpoints.push_back(r);
    }
  }

  RunMeta merged = old.meta;
  auto sessions = parse_untrusted_json(old.meta.sessions_json);
  if (!sessions.is_array()) sessions = nlohmann::json::array();
  for (auto& s : nlohmann::json::parse(meta.sessions_json)) sessions.push_back(s);
  merged.sessions_json = sessions.dump();

  auto superseded = old.superseded;
  const bool any_gone = !gone.steps.empty() || !gone.fingerprints.empty() || !gone.checkpoints.empty() ||
                        !gone.evals.empty() || !gone.signatures.empty();
  if (any_gone)
    superseded.emplace_back(fmt::format("superseded/{}", superseded.size() + 1), std::move(gone));
  write_log_file(file, merged, kept, superseded);

  const Heads h = heads_of(meta.genesis(), kept, kept.steps.size(), kept.fingerprints.size(),
                           kept.checkpoints.size(), kept.evals.size());
  LogWriter w(file, std::move(key), h, kept.signatures.empty() ? nullptr : &kept.signatures.back());
  w.sign();
  return w;
}

void LogWriter::check_space() const {
  struct statvfs st {};
  if (statvfs(path_.parent_path().empty() ? "." : path_.parent_path().c_str(), &st) != 0) return;
  const uint64_t free = uint64_t(st.f_bavail) * uint64_t(st.f_frsize);
  if (free < kFreeSpaceReserve)
    fail(
        "the disk holding {} is full ({} KiB free, the log keeps {} KiB in reserve): nothing more "
        "was written, the log is valid through step {}",
        path_.string(), free >> 10, kFreeSpaceReserve >> 10,
        heads_.steps == 0 ? std::string("none") : std::to_string(heads_.steps - 1));
}

void LogWriter::append_step(const StepFields& f, const StepTiming& timing) {
  check_space();
  WIT_CHECK(f.step == heads_.steps, "step {} recorded as row {}", f.step, heads_.steps);
  StepRow r{f, timing, heads_.step_head, {}};
  r.hash = record_hash(r.prev, f);
  io::append_steps(columns_, {r});
  file_.flush();
  heads_.step_head = r.hash;
  ++heads_.steps;
}

// A side-table row: anchored to a step record (the last one, but for a late checkpoint),
// chained to the table's previous row.
template <typename Row, typename Fields, typename HashFn, typename AppendFn>
void LogWriter::append_side(const Fields& f, Digest& head, uint64_t& rows, HashFn hash_fn,
                            AppendFn append, const Digest& anchor) {
  check_space();
  Row r{f, anchor, head, {}};
  r.hash = hash_fn(r.prev, r.anchor, f);
  append(columns_, std::vector<Row>{r});
  file_.flush();
  head = r.hash;
  ++rows;
}

void LogWriter::append_fingerprint(const FingerprintFields& f) {
  append_side<FingerprintRow>(f, heads_.fingerprint_head, heads_.fingerprints, fingerprint_hash,
                              io::append_fingerprints, heads_.step_head);
}

void LogWriter::append_checkpoint(const CheckpointFields& f) { append_checkpoint(f, heads_.step_head); }

void LogWriter::append_checkpoint(const CheckpointFields& f, const Digest& anchor) {
  append_side<CheckpointRow>(f, heads_.checkpoint_head, heads_.checkpoints, checkpoint_hash,
                             io::append_checkpoints, anchor);
}

void LogWriter::append_eval(const EvalFields& f) {
  append_side<EvalRow>(f, heads_.eval_head, heads_.evals, eval_hash, io::append_evals,
                       heads_.step_head);
}

void LogWriter::sign() {
  if (any_signature_ && same_counts(signed_, heads_)) return;
  check_space();
  SignatureRow s;
  s.heads = heads_;
  s.head = head_hash(heads_);
  s.public_key = key_.public_key();
  s.signature = key_.sign(signed_message(s.head));
  s.wall_time = unix_now();
  io::append_signatures(columns_, {s});
  file_.flush();
  signed_ = heads_;
  any_signature_ = true;
}

}  // namespace wit::witness
