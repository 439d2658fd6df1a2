// `wit board`: the leaderboard's commands (built where SQLite, libpq and Boost are found).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/wit/board.h"
#include "apps/wit/commands.h"

namespace wit::cli {

void add_board(CLI::App& app) {
  auto* board = app.add_subcommand(
      "board",
      "The leaderboard that certifies its entries itself: tracks (what entries compete on), the "
      "board's server, submitting runs, verification workers, re-challenges (docs/board.md).");
  board->require_subcommand(1);
  auto tracks_file = std::make_shared<std::filesystem::path>();
  auto runs = std::make_shared<std::vector<std::filesystem::path>>();
  auto* tracks = board->add_subcommand(
      "tracks",
      "List the tracks of a tracks file (YAML: dataset, model family and parameter budget, token "
      "budget, evaluation); with runs, say which tracks each may enter and why not the others "
      "(exit 1 when a run may enter none).");
  tracks->add_option("file", *tracks_file, "The tracks file (e.g. configs/board/tracks.yaml)")
      ->required();
  tracks->add_option("runs", *runs, "Run directories (or witness logs) to check");
  auto data_dir = std::make_shared<std::filesystem::path>();
  auto* dataset = board->add_subcommand(
      "dataset", "Print a prepared dataset's manifest root, data layout and tokenizer as a track's "
                 "dataset entry");
  dataset->add_option("dir", *data_dir, "A prepared data directory")->required();
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
  serve->add_option("--lease", so->lease,
                    "Seconds a job stays leased to a worker that stops renewing it")
      ->capture_default_str();
  auto db = std::make_shared<std::string>("board.sqlite");
  auto name = std::make_shared<std::string>();
  auto admin = std::make_shared<bool>(false);
  auto* participant = board->add_subcommand(
      "participant", "Add a participant to the board's database and print its token, once");
  participant->add_option("name", *name, "The participant's name (unique)")->required();
  participant->add_flag("--admin", *admin, "An operator's token rather than a participant's");
  participant->add_option("--db", *db, "The board's database (as for serve)")->capture_default_str();
  auto upload_files = std::make_shared<std::vector<std::filesystem::path>>();
  auto server = std::make_shared<std::string>();
  auto token = std::make_shared<std::string>();
  auto* upload = board->add_subcommand(
      "upload", "Upload files to a board in pieces; an interrupted upload resumes where the "
                "board says it stopped");
  upload->add_option("files", *upload_files, "Files to upload")->required();
  upload->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  upload->add_option("--token", *token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  auto run_dir = std::make_shared<std::filesystem::path>();
  auto track = std::make_shared<std::string>();
  auto entry_name = std::make_shared<std::string>();
  auto* submit = board->add_subcommand(
      "submit", "Upload a finished run (witness log, config, model, checkpoints) and enter it in a "
                "track; prints the entry and the board's signed receipt");
  submit->add_option("run", *run_dir, "The run directory")->required();
  submit->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  submit->add_option("--token", *token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  submit->add_option("--track", *track, "The track to enter")->required();
  submit->add_option("--name", *entry_name, "The entry's name on the board")->required();
  auto key_file = std::make_shared<std::filesystem::path>();
  submit->add_option("--key", *key_file,
                     "The run's private trainer key, registered with the board before submitting "
                     "(default: $WIT_SIGNING_KEY or ~/.config/wit/signing-key.pem when it is the "
                     "run's); the board takes only runs signed by a key you registered");
  auto* register_key = board->add_subcommand(
      "register-key",
      "Register a trainer key for your participant: the board then takes runs signed by it from "
      "you. Proves you hold the private key by signing the board's claim; nothing secret leaves");
  register_key->add_option("--key", *key_file,
                           "The private trainer key (default: $WIT_SIGNING_KEY or "
                           "~/.config/wit/signing-key.pem)");
  register_key->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  register_key->add_option("--token", *token, "A participant's token (default: $WIT_BOARD_TOKEN)");
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
  auto challenge_entry = std::make_shared<std::string>();
  auto challenge_count = std::make_shared<int64_t>(1);
  auto* challenge = board->add_subcommand(
      "challenge", "Re-challenge an entry: the board draws K more of its segments from its own "
                   "randomness and replays them; the entry's guarantee tightens, or it is struck");
  challenge->add_option("entry", *challenge_entry, "The entry's id")->required();
  challenge->add_option("-c,--count", *challenge_count, "Segments to draw")->capture_default_str();
  challenge->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  challenge->add_option("--token", *token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  auto* show = board->add_subcommand(
      "show", "Print an entry's verification: status, guarantee, the first failure, every check");
  show->add_option("entry", *challenge_entry, "The entry's id")->required();
  show->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  actions()[board] = [=] {
    if (board->got_subcommand(tracks)) return board_tracks(*tracks_file, *runs);
    if (board->got_subcommand(worker)) return board_worker(*wo);
    if (board->got_subcommand(challenge))
      return board_challenge(*challenge_entry, *challenge_count, *server, *token);
    if (board->got_subcommand(show)) return board_show(*challenge_entry, *server);
    if (board->got_subcommand(submit))
      return board_submit(*run_dir, *server, *token, *track, *entry_name, *key_file);
    if (board->got_subcommand(register_key)) return board_register_key(*key_file, *server, *token);
    if (board->got_subcommand(upload)) return board_upload(*upload_files, *server, *token);
    if (board->got_subcommand(serve)) return board_serve(*so);
    if (board->got_subcommand(participant)) return board_add_participant(*db, *name, *admin);
    return board_dataset(*data_dir);
  };
}

}  // namespace wit::cli
