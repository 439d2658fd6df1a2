// `wit board`: the leaderboard's commands (built where SQLite, libpq and Boost are found). Each
// subcommand is added by a function of its own and runs its handler in apps/wit/board.h.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/wit/board.h"
#include "apps/wit/commands.h"

namespace wit::cli {

namespace fs = std::filesystem;

namespace {

// The board a client subcommand talks to, and the participant it acts as.
struct BoardClient {
  std::string server, token;
  void add_to(CLI::App* sub, bool needs_token = true) {
    sub->add_option("--server", server, "The board, http://HOST:PORT/")->required();
    if (needs_token)
      sub->add_option("--token", token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  }
};

void add_tracks(CLI::App* board, Commands& commands) {
  auto tracks_file = std::make_shared<fs::path>();
  auto runs = std::make_shared<std::vector<fs::path>>();
  auto* sub = board->add_subcommand(
      "tracks",
      "List the tracks of a tracks file (YAML: dataset, model family and parameter budget, token "
      "budget, evaluation); with runs, say which tracks each may enter and why not the others "
      "(exit 1 when a run may enter none).");
  sub->add_option("file", *tracks_file, "The tracks file (e.g. configs/board/tracks.yaml)")
      ->required();
  sub->add_option("runs", *runs, "Run directories (or witness logs) to check");
  commands.on_run(sub, [=] { return board_tracks(*tracks_file, *runs); });
}

void add_dataset(CLI::App* board, Commands& commands) {
  auto dir = std::make_shared<fs::path>();
  auto* sub = board->add_subcommand(
      "dataset", "Print a prepared dataset's manifest root, data layout and tokenizer as a track's "
                 "dataset entry");
  sub->add_option("dir", *dir, "A prepared data directory")->required();
  commands.on_run(sub, [=] { return board_dataset(*dir); });
}

void add_serve(CLI::App* board, Commands& commands) {
  auto so = std::make_shared<BoardServeOptions>();
  auto* serve = board->add_subcommand(
      "serve", "Serve the board's pages (HTML, no JavaScript needed) and JSON API (/api/) until "
               "interrupted, verifying every entry: structure and data audit at submission, then "
               "the first, the last and --challenges drawn segments replayed by its own pool and "
               "by participants' workers");
  serve->add_option("--tracks", so->tracks, "The tracks file")->required();
  serve->add_option("--datasets", so->datasets,
                    "Prepared datasets of the tracks (wit prepare); a track whose dataset is not "
                    "among them takes no entries")
      ->check(CLI::ExistingDirectory);
  serve->add_option("--listen", so->listen, "HOST:PORT to listen on")->capture_default_str();
  serve->add_option("--threads", so->threads, "Threads serving requests")->capture_default_str();
  serve->add_option("--audit-threads", so->audit_threads,
                    "Threads auditing submissions (structure and data stages), apart from the "
                    "threads serving pages, uploads and workers")
      ->capture_default_str();
  serve->add_option("--db", so->db,
                    "The board's database: an SQLite file (created if missing) or a "
                    "postgresql:// URL")
      ->capture_default_str();
  serve->add_option("--files", so->files,
                    "Where uploaded files are kept, by content hash (created if missing)")
      ->capture_default_str();
  serve->add_option("--key", so->key,
                    "The board's signing key for receipts and certificates (wit keygen makes one)")
      ->capture_default_str();
  serve->add_option("--pool", so->pool, "The board's own verification workers (threads; 0: none)")
      ->capture_default_str();
  serve->add_option("--challenges", so->challenges,
                    "Segments drawn per entry, after it is committed, besides the first and the last")
      ->capture_default_str();
  serve->add_option("--contribution", so->contribution,
                    "Confirmed replays of other entries' segments a submitter's workers owe before "
                    "its entries are ranked")
      ->capture_default_str();
  serve->add_option("--spot-check", so->spot_check,
                    "Each draw's coin: the probability that the board replays the drawn segment "
                    "itself (otherwise two participants' workers agreeing on verdict and evidence "
                    "decide it); a forged fraction f escapes colluding workers with probability "
                    "<= (1 - P f)^c")
      ->capture_default_str();
  serve->add_option("--pool-delay", so->pool_delay,
                    "Seconds the pool leaves an open job to participants' workers before taking it")
      ->capture_default_str();
  serve->add_option("--upload-quota", so->upload_quota,
                    "GiB of unfinished uploads one participant may hold at once")
      ->capture_default_str();
  serve->add_option("--unused-quota", so->unused_quota,
                    "GiB of uploaded files, finished or not, that no entry uses yet, one "
                    "participant may hold (a finished file counts until an entry uses it; one "
                    "unused for 7 days is dropped)")
      ->capture_default_str();
  serve->add_option("--lease", so->lease,
                    "Seconds a job stays leased to a worker that stops renewing it")
      ->capture_default_str();
  serve->add_option("--max-hold", so->max_hold,
                    "Hours a participant's worker may hold one job, renewals included; then it "
                    "goes back to the queue (after two such leases, to the board's own pool)")
      ->capture_default_str();
  commands.on_run(serve, [=] { return board_serve(*so); });
}

void add_participant(CLI::App* board, Commands& commands) {
  auto db = std::make_shared<std::string>("board.sqlite");
  auto name = std::make_shared<std::string>();
  auto admin = std::make_shared<bool>(false);
  auto* sub = board->add_subcommand(
      "participant", "Add a participant to the board's database and print its token, once");
  sub->add_option("name", *name, "The participant's name (unique)")->required();
  sub->add_flag("--admin", *admin, "An operator's token rather than a participant's");
  sub->add_option("--db", *db, "The board's database (as for serve)")->capture_default_str();
  commands.on_run(sub, [=] { return board_add_participant(*db, *name, *admin); });
}

void add_upload(CLI::App* board, Commands& commands) {
  auto files = std::make_shared<std::vector<fs::path>>();
  auto client = std::make_shared<BoardClient>();
  auto* sub = board->add_subcommand(
      "upload", "Upload files to a board in pieces; an interrupted upload resumes where the "
                "board says it stopped");
  sub->add_option("files", *files, "Files to upload")->required();
  client->add_to(sub);
  commands.on_run(sub, [=] { return board_upload(*files, client->server, client->token); });
}

void add_submit(CLI::App* board, Commands& commands) {
  auto run = std::make_shared<fs::path>();
  auto track = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  auto key = std::make_shared<fs::path>();
  auto client = std::make_shared<BoardClient>();
  auto* sub = board->add_subcommand(
      "submit", "Upload a finished run (witness log, config, model, checkpoints) and enter it in a "
                "track; prints the entry and the board's signed receipt");
  sub->add_option("run", *run, "The run directory")->required();
  client->add_to(sub);
  sub->add_option("--track", *track, "The track to enter")->required();
  sub->add_option("--name", *name, "The entry's name on the board")->required();
  sub->add_option("--key", *key,
                  "The run's private trainer key, registered with the board before submitting "
                  "(default: $WIT_SIGNING_KEY or ~/.config/wit/signing-key.pem when it is the "
                  "run's); the board takes only runs signed by a key you registered");
  commands.on_run(sub, [=] {
    return board_submit(*run, client->server, client->token, *track, *name, *key);
  });
}

void add_register_key(CLI::App* board, Commands& commands) {
  auto key = std::make_shared<fs::path>();
  auto client = std::make_shared<BoardClient>();
  auto* sub = board->add_subcommand(
      "register-key",
      "Register a trainer key for your participant: the board then takes runs signed by it from "
      "you. Proves you hold the private key by signing the board's claim; nothing secret leaves");
  sub->add_option("--key", *key,
                  "The private trainer key (default: $WIT_SIGNING_KEY or "
                  "~/.config/wit/signing-key.pem)");
  client->add_to(sub);
  commands.on_run(sub, [=] { return board_register_key(*key, client->server, client->token); });
}

void add_worker(CLI::App* board, Commands& commands) {
  auto wo = std::make_shared<BoardWorkerOptions>();
  auto* worker = board->add_subcommand(
      "worker", "Replay other participants' segments for a board (a normal MPI job: mpirun -np N "
                "allowed; --cache must then be seen by every rank). Confirmed replays count "
                "towards the contribution a board requires before ranking your entries");
  worker->add_option("--server", wo->server, "The board, http://HOST:PORT/")->required();
  worker->add_option("--token", wo->token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  worker->add_option("--datasets", wo->datasets, "Prepared datasets to replay with (wit prepare)")
      ->check(CLI::ExistingDirectory);
  worker->add_option("--cache", wo->cache, "Where the runs' files are kept, by content hash")
      ->capture_default_str();
  worker->add_option("--name", wo->name, "The worker's name on the board (default: host and pid)");
  worker->add_option("--jobs", wo->jobs, "Stop after this many jobs (0: no limit)")->capture_default_str();
  worker->add_option("--idle-exit", wo->idle_exit,
                     "Stop after this many seconds without a job (0: never)")
      ->capture_default_str();
  commands.on_run(worker, [=] { return board_worker(*wo); });
}

void add_challenge(CLI::App* board, Commands& commands) {
  auto entry = std::make_shared<std::string>();
  auto count = std::make_shared<int64_t>(1);
  auto client = std::make_shared<BoardClient>();
  auto* sub = board->add_subcommand(
      "challenge", "Re-challenge a certified entry: the board draws K more of its segments from "
                   "its own randomness and replays them; the entry's guarantee tightens, or it is "
                   "struck");
  sub->add_option("entry", *entry, "The entry's id")->required();
  sub->add_option("-c,--count", *count, "Segments to draw")->capture_default_str();
  client->add_to(sub);
  commands.on_run(sub, [=] {
    return board_challenge(*entry, *count, client->server, client->token);
  });
}

void add_show(CLI::App* board, Commands& commands) {
  auto entry = std::make_shared<std::string>();
  auto client = std::make_shared<BoardClient>();
  auto* sub = board->add_subcommand(
      "show", "Print an entry's verification: status, guarantee, the first failure, every check");
  sub->add_option("entry", *entry, "The entry's id")->required();
  client->add_to(sub, /*needs_token=*/false);
  commands.on_run(sub, [=] { return board_show(*entry, client->server); });
}

}  // namespace

void add_board(CLI::App& app, Commands& commands) {
  auto* board = app.add_subcommand(
      "board",
      "The leaderboard that certifies its entries itself: tracks (what entries compete on), the "
      "board's server, submitting runs, verification workers, re-challenges (docs/board.md).");
  board->require_subcommand(1);
  add_tracks(board, commands);
  add_dataset(board, commands);
  add_serve(board, commands);
  add_participant(board, commands);
  add_upload(board, commands);
  add_submit(board, commands);
  add_register_key(board, commands);
  add_worker(board, commands);
  add_challenge(board, commands);
  add_show(board, commands);
}

}  // namespace wit::cli
