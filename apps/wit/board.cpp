#include "apps/wit/board.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <optional>
#include <unistd.h>

#include "apps/wit/board_checks.h"
#include "board/blob_store.h"
#include "board/jobs.h"
#include "board/client.h"
#include "board/participants.h"
#include "board/server.h"
#include "board/site.h"
#include "board/track.h"
#include "record/format.h"
#include "record/reader.h"
#include "record/signing.h"
#include "core/clock.h"
#include "core/error.h"
#include "trainer/data/dataset.h"
#include "trainer/data/manifest.h"
#include "record/reader.h"

namespace wit::cli {

namespace fs = std::filesystem;

std::string participant_token(const std::string& flag, const char* doing) {
  std::string token = flag;
  if (token.empty())
    if (const char* env = std::getenv("WIT_BOARD_TOKEN")) token = env;
  if (token.empty()) fail("{} needs a participant's token: --token or WIT_BOARD_TOKEN", doing);
  return token;
}

int board_tracks(const fs::path& file, const std::vector<fs::path>& runs) {
  const std::vector<board::Track> tracks = board::load_tracks(file);
  if (runs.empty()) {
    for (const board::Track& t : tracks)
      fmt::print(
          "{}: {}\n  dataset {} ({} tokens, layout {}), {} models up to {} parameters, up to {} "
          "training tokens, ranked by {} {} over {} sequences of {} tokens\n",
          t.id, t.title, to_hex(t.manifest_root).substr(0, 16), t.tokenizer,
          to_hex(t.data_layout).substr(0, 16), t.family, t.max_params, t.max_tokens, t.split,
          t.metric, t.eval_sequences, t.eval_seq_len);
    return 0;
  }
  int status = 0;
  for (const fs::path& run : runs) {
    const fs::path log_file = fs::is_directory(run) ? run / "witness.h5" : run;
    if (!fs::exists(log_file)) fail("{} has no witness log ({})", run.string(), log_file.string());
    const witness::WitnessLog log = witness::read_log(log_file);
    bool any = false;
    for (const board::Track& t : tracks) {
      const std::vector<std::string> problems = board::entry_problems(t, log.meta);
      if (problems.empty()) {
        fmt::print("{}: may enter {}\n", run.string(), t.id);
        any = true;
      } else {
        fmt::print("{}: may not enter {}: {}\n", run.string(), t.id, fmt::join(problems, "; "));
      }
    }
    if (!any) status = 1;
  }
  return status;
}

int board_dataset(const fs::path& dir) {
  const data::Dataset d = data::Dataset::open(dir);
  const data::Manifest& m = d.manifest();
  fmt::print("dataset: {{manifest_root: {}, data_layout: {}, tokenizer: {}}}\n", to_hex(m.root),
             to_hex(data::layout_digest(m)), m.tokenizer);
  return 0;
}

namespace {

// One progress line for a set of uploads: the bytes the board holds of all of them, the rate of
// what this process sends, and the ETA. On a terminal the line is redrawn in place; elsewhere (a
// log, a pipe) a line follows each piece. Notes (a file on the board already, resuming) get lines
// of their own.
class UploadProgress {
 public:
  explicit UploadProgress(const std::vector<fs::path>& files)
      : tty_(::isatty(::fileno(stdout)) == 1), files_(files.size()) {
    for (const fs::path& f : files) total_ += fs::file_size(f);
  }

  // Uploads one of the files, its bytes counted into the line.
  Digest upload(board::Client& client, const fs::path& file) {
    const uint64_t size = fs::file_size(file);
    const Digest sha = client.upload(
        file, {[&](uint64_t on_board, uint64_t sent) {
                 sent_ += sent;
                 draw(base_ + on_board);
               },
               [&](const std::string& line) { note(line); }});
    base_ += size;
    return sha;
  }
  // Ends the redrawn line before anything else is printed.
  void done() {
    if (tty_ && drawn_) fmt::print("\n");
    drawn_ = false;
    std::fflush(stdout);
  }

 private:
  void draw(uint64_t on_board) {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = double(sent_) / std::max(secs, 1e-3);
    const uint64_t left = total_ > on_board ? total_ - on_board : 0;
    const std::string line = fmt::format(
        "upload: {:.1f} of {:.1f} MB ({:.0f}%) in {} file(s), {:.1f} MB/s, ETA {}",
        double(on_board) / 1e6, double(total_) / 1e6,
        total_ ? 100.0 * double(on_board) / double(total_) : 100.0, files_, rate / 1e6,
        rate > 0 ? format_duration(double(left) / rate) : std::string("?"));
    fmt::print(tty_ ? "\r{}\x1b[K" : "{}\n", line);
    drawn_ = true;
    std::fflush(stdout);
  }
  void note(const std::string& line) {
    fmt::print(tty_ && drawn_ ? "\r{}\x1b[K\n" : "{}\n", line);
    drawn_ = false;
    std::fflush(stdout);
  }

  const bool tty_;
  const size_t files_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  uint64_t total_ = 0, base_ = 0, sent_ = 0;
  bool drawn_ = false;
};

}  // namespace

int board_upload(const std::vector<fs::path>& files, const std::string& server,
                 const std::string& token_flag) {
  const std::string token = participant_token(token_flag, "uploading");
  for (const fs::path& f : files)
    if (!fs::is_regular_file(f)) fail("{} is not a file", f.string());
  board::Client client(server, token);
  UploadProgress progress(files);
  std::vector<Digest> shas;
  for (const fs::path& f : files) shas.push_back(progress.upload(client, f));
  progress.done();
  for (size_t i = 0; i < files.size(); ++i)
    fmt::print("{}: uploaded, sha256 {}\n", files[i].string(), to_hex(shas[i]));
  return 0;
}

namespace {

// Registers `key` as one of the participant's trainer keys on the board: the board's claim for
// this participant, signed with the private key.
void register_key(board::Client& client, const witness::SigningKey& key) {
  const nlohmann::json me = client.call("GET", "/api/me");
  const witness::PublicKey board_key =
      witness::load_public_key(me.at("board_key").get<std::string>());
  const witness::Signature proof =
      key.sign(board::trainer_key_claim(board_key, me.at("id").get<std::string>()));
  client.call("POST", "/api/me/keys",
              nlohmann::json{{"public_key", to_hex(key.public_key().data(), key.public_key().size())},
                             {"proof", to_hex(proof.data(), proof.size())}}
                  .dump());
  fmt::print("trainer key {} registered for participant {} (board key {})\n",
             witness::key_id(key.public_key()), me.at("name").get<std::string>(),
             witness::key_id(board_key));
}

}  // namespace

int board_register_key(const fs::path& key_file, const std::string& server,
                       const std::string& token_flag) {
  const std::string token = participant_token(token_flag, "registering a trainer key");
  const fs::path file = key_file.empty() ? witness::default_key_path() : key_file;
  board::Client client(server, token);
  register_key(client, witness::SigningKey::load(file));
  return 0;
}

int board_submit(const fs::path& run, const std::string& server, const std::string& token_flag,
                 const std::string& track, const std::string& name, const fs::path& key_flag) {
  const std::string token = participant_token(token_flag, "submitting");
  std::vector<std::string> names = {"witness.h5", "config.yaml", "model.safetensors"};
  for (const char* n : {"witness.h5", "config.yaml", "model.safetensors"})
    if (!fs::is_regular_file(run / n)) fail("{} has no {}: is it a finished run?", run.string(), n);
  const witness::WitnessLog log = witness::read_log(run / "witness.h5");
  // The checkpoints the log commits to, and no other file (the board refuses extras).
  for (const auto& row : log.tables.checkpoints)
    names.push_back(witness::checkpoint_file_name(row.fields.step));
  // Everything that can be known here is checked before a byte is uploaded: the log whole,
  // the track's rules (as the board gives them) and the trainer key.
  const witness::LogReport report = witness::check_log(log);
  if (!report.ok())
    fail("{}: the witness log does not check: {}; nothing was uploaded", run.string(),
         report.problems.front().text());
  if (!report.complete || !report.signed_heads || report.signed_steps != report.valid_steps)
    fail("{}: the run is not complete and signed ({} of {} steps signed); nothing was uploaded",
         run.string(), report.signed_steps, report.config ? report.config->train.steps : 0);
  board::Client client(server, token);
  const board::Track rules = board::track_from_json(client.call("GET", "/api/tracks/" + track));
  if (const auto problems = board::entry_problems(rules, log.meta); !problems.empty())
    fail("{} may not enter {}: {}; nothing was uploaded (wit board tracks says which tracks a run "
         "may enter)",
         run.string(), track, fmt::join(problems, "; "));
  // The board takes only runs signed by a key the participant registered: register the run's
  // key when its private key is at hand (--key, else the default key when it is the run's).
  const fs::path key_file = key_flag.empty() ? witness::default_key_path() : key_flag;
  if (!key_flag.empty() || fs::exists(key_file)) {
    witness::SigningKey key = witness::SigningKey::load(key_file);
    if (key.public_key() == log.meta.public_key)
      register_key(client, key);
    else if (!key_flag.empty())
      fail("--key {} is trainer key {}, but {} is signed by key {}", key_file.string(),
           witness::key_id(key.public_key()), run.string(), witness::key_id(log.meta.public_key));
  }
  const nlohmann::json me = client.call("GET", "/api/me");
  const std::string log_key = to_hex(log.meta.public_key.data(), log.meta.public_key.size());
  const nlohmann::json keys = me.value("trainer_keys", nlohmann::json::array());
  if (std::find(keys.begin(), keys.end(), log_key) == keys.end())
    fail("{} is signed by trainer key {}, which participant {} has not registered on this board "
         "(give its private key with --key, or run wit board register-key); nothing was uploaded",
         run.string(), witness::key_id(log.meta.public_key), me.value("name", "?"));
  nlohmann::json files = nlohmann::json::object();
  std::vector<fs::path> paths;
  for (const std::string& n : names) paths.push_back(run / n);
  UploadProgress progress(paths);
  for (const std::string& n : names) files[n] = to_hex(progress.upload(client, run / n));
  progress.done();
  const nlohmann::json entry =
      client.call("POST", "/api/entries", nlohmann::json{{"track", track}, {"name", name}, {"files", files}}.dump(),
                  std::chrono::hours(6));  // the board audits the run (hashes every checkpoint) first
  nlohmann::json receipt = entry["receipt"];
  const std::string signature = receipt["signature"];
  receipt.erase("signature");
  const witness::PublicKey board_key = witness::load_public_key(receipt["board_key"].get<std::string>());
  const auto sig = witness::signature_from_hex(signature);
  if (!sig || !witness::verify_signature(board_key, "wit-board-receipt-v1" + receipt.dump(), *sig))
    fail("the board's receipt for entry {} does not verify", entry.value("id", "?"));
  fmt::print("submitted {} to {} as entry {} ({}): signed head {}, {} steps\n"
             "receipt signed by the board's key {}\n",
             run.string(), track, entry["id"].get<std::string>(), entry["status"].get<std::string>(),
             entry["head"].get<std::string>(), entry["steps"].get<int64_t>(), witness::key_id(board_key));
  return 0;
}

int board_add_participant(const std::string& where, const std::string& name, bool admin) {
  auto db = board::Db::open(where);
  board::migrate(*db);
  const std::string token = board::add_participant(*db, name, admin);
  fmt::print("participant {}{} added to {}\ntoken (shown once; the board keeps only its hash):\n{}\n",
             name, admin ? " (admin)" : "", where, token);
  return 0;
}

int board_serve(const BoardServeOptions& o) {
  const size_t colon = o.listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == o.listen.size() ||
      o.listen.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      std::stoul(o.listen.substr(colon + 1)) > 65535)
    fail("--listen {}: expected HOST:PORT, e.g. 127.0.0.1:8080", o.listen);
  if (o.threads < 1 || o.threads > 256) fail("--threads {}: expected 1 to 256", o.threads);
  if (o.audit_threads < 1 || o.audit_threads > 64) fail("--audit-threads {}: expected 1 to 64", o.audit_threads);
  if (o.pool < 0 || o.pool > 64) fail("--pool {}: expected 0 to 64 workers", o.pool);
  if (!(o.pool_delay >= 0)) fail("--pool-delay {}: expected >= 0 seconds", o.pool_delay);
  if (!(o.lease >= 1)) fail("--lease {}: expected at least 1 second", o.lease);
  if (!(o.max_hold * 3600 >= o.lease && o.max_hold <= 1e6))
    fail("--max-hold {}: expected hours, at least one lease (--lease {} s) and at most 10^6",
         o.max_hold, o.lease);
  if (!(o.upload_quota > 0 && o.upload_quota < 1e9)) fail("--upload-quota {}: expected GiB > 0", o.upload_quota);
  if (!(o.unused_quota >= o.upload_quota && o.unused_quota < 1e9))
    fail("--unused-quota {}: expected GiB, at least --upload-quota ({})", o.unused_quota, o.upload_quota);
  board::ServerOptions so;
  so.host = o.listen.substr(0, colon);
  so.port = uint16_t(std::stoul(o.listen.substr(colon + 1)));
  so.threads = o.threads;
  so.slow_threads = o.audit_threads;
  const std::vector<board::Track> tracks = board::load_tracks(o.tracks);
  board::SiteOptions v;
  v.policy.challenges = o.challenges;
  v.policy.contribution = o.contribution;
  v.policy.spot_check = o.spot_check;
  v.policy.pool_delay_ms = int64_t(o.pool_delay * 1000);
  v.policy.lease_ms = int64_t(o.lease * 1000);
  v.policy.max_hold_ms = int64_t(o.max_hold * 3'600'000);
  v.checks = replay_checks();
  v.datasets = index_datasets(o.datasets);
  v.work_dir = fs::absolute(o.files) / "work";
  v.upload_quota = uint64_t(o.upload_quota * double(uint64_t(1) << 30));
  v.unused_quota = uint64_t(o.unused_quota * double(uint64_t(1) << 30));
  for (const board::Track& t : tracks)
    if (!v.datasets.find(to_hex(t.manifest_root), to_hex(t.data_layout)))
      fmt::print("wit board: warning: track {} takes no entries: no --datasets directory holds its "
                 "dataset {}\n",
                 t.id, to_hex(t.manifest_root).substr(0, 16));
  if (!fs::exists(o.key))
    fail("the board's signing key {} does not exist: make one with `wit keygen --out {}`",
         o.key.string(), o.key.string());
  const witness::SigningKey key = witness::SigningKey::load(o.key);
  auto db = board::Db::open(o.db);
  board::migrate(*db);
  board::BlobStore files(o.files);
  fs::create_directories(v.work_dir);
  {
    board::JobQueue q(*db, v.policy, key);
    if (const int n = q.schedule_missing(); n > 0)
      fmt::print("wit board: drew the challenges of {} entr{} received before a restart\n", n,
                 n == 1 ? "y" : "ies");
  }
  auto log = [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  const board::Site site(tracks, *db, files, key, v);
  board::Server server(site, so);
  std::optional<board::LocalPool> pool;
  if (o.pool > 0)
    pool.emplace(o.db, v.policy, key, files, v.datasets, v.checks, v.work_dir, o.pool, log);
  server.stop_on_interrupt([](int sig) {
    fmt::print("wit board: {}, stopping\n", sig == SIGINT ? "interrupted" : "terminated");
    std::fflush(stdout);
  });
  fmt::print("wit board: serving {} on http://{}:{}/ (Ctrl-C to stop), receipts and certificates "
             "signed by key {}; {} pool worker(s), {} challenges per entry, {} confirmed replays "
             "to rank\n",
             o.tracks.string(), so.host, server.port(), witness::key_id(key.public_key()), o.pool,
             o.challenges, o.contribution);
  std::fflush(stdout);
  server.run();
  if (pool) pool->stop();
  return 0;
}

int board_challenge(const std::string& entry, int64_t count, const std::string& server,
                    const std::string& token_flag) {
  const std::string token = participant_token(token_flag, "re-challenging");
  board::Client client(server, token);
  const auto r = client.call("POST", fmt::format("/api/entries/{}/challenges", entry),
                             nlohmann::json{{"count", count}}.dump());
  fmt::print("entry {}: drew segment(s) {}; the board replays them\n", entry,
             fmt::join(r["drawn_segments"].get<std::vector<int64_t>>(), ", "));
  return 0;
}

int board_show(const std::string& entry, const std::string& server) {
  board::Client client(server, "");
  const auto e = client.call("GET", "/api/entries/" + entry);
  const auto& v = e["verification"];
  fmt::print("entry {} ({}) on {} by {}: {}\n", entry, e["name"].get<std::string>(),
             e["track"].get<std::string>(), e["participant"].get<std::string>(),
             e["status"].get<std::string>());
  if (e["status"] == "struck") fmt::print("  struck: {}\n", v["failure"].get<std::string>());
  if (e["status"] == "certified")
    fmt::print("  {}\n", v["ranked"].get<bool>() ? std::string("ranked")
                                                  : "not ranked: " + v["unranked_because"].get<std::string>());
  fmt::print("  final val loss {}, {} steps in {} segments\n", v["val_loss"].get<double>(),
             v["steps"].get<int64_t>(), v["segments"].get<int64_t>());
  if (v.contains("guarantee")) fmt::print("  guarantee: {}\n", v["guarantee"]["statement"].get<std::string>());
  // A certified entry keeps its certificate while re-challenged segments are replayed.
  const auto waiting = std::count_if(v["checks"].begin(), v["checks"].end(),
                                     [](const auto& c) { return c["status"] == "pending"; });
  if (e["status"] == "certified" && waiting > 0)
    fmt::print("  {} drawn check(s) being replayed; the certificate stands as issued until they are "
               "decided\n",
               waiting);
  for (const auto& c : v["checks"])
    fmt::print("  {}: {}{}{}\n", c["label"].get<std::string>(), c["status"].get<std::string>(),
               c["decided_by"].get<std::string>().empty() ? "" : " (" + c["decided_by"].get<std::string>() + ")",
               c["detail"].get<std::string>().empty() ? "" : ": " + c["detail"].get<std::string>());
  return 0;
}

}  // namespace wit::cli
