// `wit board`: the leaderboard's operator tools. `tracks` lists a tracks file's tracks and says
// which of them given runs may enter; `dataset` prints a prepared dataset's identity in the
// form a track takes it; `serve` runs the board's web server.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace wit::cli {

int board_tracks(const std::filesystem::path& tracks, const std::vector<std::filesystem::path>& runs);
int board_dataset(const std::filesystem::path& dir);
// Serves the board's pages and API on HOST:PORT until SIGINT or SIGTERM.
int board_serve(const std::filesystem::path& tracks, const std::string& db,
                const std::filesystem::path& files, const std::filesystem::path& key,
                const std::string& listen, int threads);
// Uploads a run's files (witness log, config, model, checkpoints) and submits it to a track;
// prints the entry and its receipt.
int board_submit(const std::filesystem::path& run, const std::string& server, const std::string& token,
                 const std::string& track, const std::string& name);
// Uploads files to a board, resuming interrupted uploads; the token comes from --token or
// WIT_BOARD_TOKEN.
int board_upload(const std::vector<std::filesystem::path>& files, const std::string& server,
                 const std::string& token);
// Adds a participant to the board's database and prints its token (shown this once).
int board_add_participant(const std::string& db, const std::string& name, bool admin);

}  // namespace wit::cli
