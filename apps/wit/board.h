// `wit board`: the leaderboard's operator tools. `tracks` lists a tracks file's tracks and says
// which of them given runs may enter; `dataset` prints a prepared dataset's identity in the
// form a track takes it.
#pragma once

#include <filesystem>
#include <vector>

namespace wit::cli {

int board_tracks(const std::filesystem::path& tracks, const std::vector<std::filesystem::path>& runs);
int board_dataset(const std::filesystem::path& dir);

}  // namespace wit::cli
