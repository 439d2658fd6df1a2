// `wit board`: the leaderboard. For operators: `tracks` (which runs may enter which track),
// `dataset` (a prepared dataset as a track names it), `participant`, `serve` (the web server,
// its verification queue and pool). For participants: `register-key`, `upload`, `submit`, `worker` (replay
// others' segments), `challenge`, `show`.
#pragma once

#include <filesystem>
#include <cstdint>
#include <string>
#include <vector>

namespace wit::cli {

// The participant's token: `flag` (--token), else $WIT_BOARD_TOKEN; an Error saying what
// `doing` ("submitting", ...) needs when there is neither.
std::string participant_token(const std::string& flag, const char* doing);

int board_tracks(const std::filesystem::path& tracks, const std::vector<std::filesystem::path>& runs);
int board_dataset(const std::filesystem::path& dir);
struct BoardServeOptions {
  std::filesystem::path tracks, files = "board-files", key = "board-key.pem";
  std::string db = "board.sqlite", listen = "127.0.0.1:8080";
  int threads = 2;
  int audit_threads = 2;        // submissions audited at once, apart from the other requests
  std::vector<std::filesystem::path> datasets;  // the tracks' prepared datasets
  int pool = 1;                 // the board's own verification workers
  int64_t challenges = 4;       // segments drawn per entry besides the first and last
  int64_t contribution = 2;     // confirmed replays a submitter owes to be ranked
  double spot_check = 0.25;     // chance the board itself checks a participant's report
  double pool_delay = 0;        // seconds the pool leaves open jobs to participants' workers
  double lease = 600;           // seconds a job lease lasts without renewal
  double max_hold = 6;          // hours a participant may hold one job, renewals included
  double upload_quota = 64;     // GiB of unfinished uploads one participant may hold
  double unused_quota = 4096;   // GiB of uploaded files no entry uses yet, finished or not
};
// Serves the board's pages and API on HOST:PORT until SIGINT or SIGTERM, verifying entries
// with its own pool of workers.
int board_serve(const BoardServeOptions& o);

struct BoardWorkerOptions {
  std::string server, token, name;
  std::vector<std::filesystem::path> datasets;
  std::filesystem::path cache = "board-cache";
  int64_t jobs = 0;         // stop after this many jobs (0: no limit)
  double idle_exit = 0;     // stop after this many seconds without a job (0: never)
};
// Replays other participants' segments for a board (`mpirun -np N` allowed: rank 0 talks to the
// board, every rank replays).
int board_worker(const BoardWorkerOptions& o);
// Draws `count` more segments of an entry to be replayed.
int board_challenge(const std::string& entry, int64_t count, const std::string& server,
                    const std::string& token);
// Prints an entry's verification: status, guarantee, failure, checks.
int board_show(const std::string& entry, const std::string& server);

// Uploads a run's files (witness log, config, model, checkpoints) and submits it to a track;
// prints the entry and its receipt. The run's trainer key is registered first when `key` (or,
// when empty, the default key) is its private key.
int board_submit(const std::filesystem::path& run, const std::string& server, const std::string& token,
                 const std::string& track, const std::string& name, const std::filesystem::path& key);
// Registers the trainer key in `key` (default: the default signing key) for the participant.
int board_register_key(const std::filesystem::path& key, const std::string& server,
                       const std::string& token);
// Uploads files to a board, resuming interrupted uploads; the token comes from --token or
// WIT_BOARD_TOKEN.
int board_upload(const std::vector<std::filesystem::path>& files, const std::string& server,
                 const std::string& token);
// Adds a participant to the board's database and prints its token (shown this once).
int board_add_participant(const std::string& db, const std::string& name, bool admin);

}  // namespace wit::cli
