// Leaderboard tracks: the file's checks (each error names the line), and which runs may enter,
// decided from the witness log's committed metadata alone.
#include "board/track.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "core/config.h"
#include "tests/data/temp_dir.h"
#include "record/run_config.h"

namespace wit::board {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

const std::string kRoot(64, 'a'), kLayout(64, 'b');

std::string track_yaml(const std::string& extra_eval = "") {
  return "tracks:\n"
         "  - id: kjv-tiny\n"
         "    title: Tiny GPT on the King James Bible\n"
         "    dataset: {manifest_root: " + kRoot + ", data_layout: " + kLayout + ", tokenizer: byte}\n"
         "    model: {family: gpt2, max_params: 4000000}\n"
         "    budget: {max_tokens: 1000000}\n"
         "    eval: {split: val, metric: loss, seq_len: 128, sequences: 64" + extra_eval + "}\n";
}

std::vector<Track> load_text(const TempDir& dir, const std::string& text) {
  const auto file = dir.path() / "tracks.yaml";
  std::ofstream(file) << text;
  return load_tracks(file);
}

// A run's metadata: the tiny config with overrides, committed as a run commits it.
witness::RunMeta run(const std::vector<std::string>& overrides, uint64_t params = 3'290'880) {
  const auto cfg = config::Config::load(std::filesystem::path(WIT_SOURCE_DIR) / "configs/tiny.yaml",
                                        run_schema(), overrides);
  witness::RunMeta m;
  m.committed_yaml = committed_yaml(cfg);
  m.manifest_root = digest_from_hex(kRoot, "root");
  m.data_layout = digest_from_hex(kLayout, "layout");
  m.num_params = params;
  return m;
}

TEST(Tracks, AWellFormedFileLoads) {
  TempDir dir;
  const auto tracks = load_text(dir, track_yaml());
  ASSERT_EQ(tracks.size(), 1u);
  EXPECT_EQ(tracks[0].id, "kjv-tiny");
  EXPECT_EQ(tracks[0].max_tokens, 1'000'000);
  EXPECT_EQ(tracks[0].eval_sequences, 64);
}

TEST(Tracks, TheApiFormRoundTrips) {
  TempDir dir;
  const Track t = load_text(dir, track_yaml()).at(0);
  const Track back = track_from_json(track_json(t));
  EXPECT_EQ(track_json(back), track_json(t));
  // A client checks a run with the board's rules as the API gives them: the same answer.
  EXPECT_EQ(entry_problems(back, run({"train.steps=100000"})), entry_problems(t, run({"train.steps=100000"})));
  EXPECT_FALSE(entry_problems(back, run({"train.steps=100000"})).empty());
  nlohmann::json missing = track_json(t);
  missing["model"].erase("max_params");
  EXPECT_TRUE(contains(error_of([&] { track_from_json(missing); }), "max_params"));
}

TEST(Tracks, EachMistakeIsNamedWithItsLine) {
  TempDir dir;
  auto error = [&](const std::string& text) { return error_of([&] { load_text(dir, text); }); };
  EXPECT_TRUE(contains(error(track_yaml(", batches: 8")), "line 7")) << error(track_yaml(", batches: 8"));
  EXPECT_TRUE(contains(error(track_yaml(", batches: 8")), "unknown key 'batches'"));
  std::string t = track_yaml();
  EXPECT_TRUE(contains(error(t + t.substr(8)), "track id 'kjv-tiny' appears twice"));
  std::string bad = track_yaml();
  bad.replace(bad.find("max_params: 4000000"), 19, "max_params: -3");
  EXPECT_TRUE(contains(error(bad), "max_params = '-3' is not a positive integer"));
  bad = track_yaml();
  bad.replace(bad.find(kRoot), 64, "xyz");
  EXPECT_TRUE(contains(error(bad), "manifest_root"));
  bad = track_yaml();
  bad.replace(bad.find("metric: loss"), 12, "metric: accuracy");
  EXPECT_TRUE(contains(error(bad), "metric = 'accuracy' (expected one of loss)"));
  EXPECT_TRUE(contains(error("tracks: []\n"), "at least one track"));
  EXPECT_TRUE(contains(error("tracks: [\n"), "invalid YAML"));
  EXPECT_TRUE(contains(error_of([&] { load_tracks(dir.path() / "none.yaml"); }), "does not exist"));
}

TEST(Tracks, ARunWithinEveryRuleMayEnter) {
  TempDir dir;
  const Track t = load_text(dir, track_yaml())[0];
  EXPECT_TRUE(entry_problems(t, run({})).empty());  // 200 steps x 2 x 8 x 128 = 409,600 tokens
}

TEST(Tracks, EachBrokenRuleIsReported) {
  TempDir dir;
  const Track t = load_text(dir, track_yaml())[0];
  auto first = [&](const witness::RunMeta& m) {
    const auto p = entry_problems(t, m);
    return p.empty() ? std::string("may enter") : p.front();
  };
  witness::RunMeta other = run({});
  other.manifest_root[0] ^= 1;
  EXPECT_TRUE(contains(first(other), "trained on dataset"));
  other = run({});
  other.data_layout[0] ^= 1;
  EXPECT_TRUE(contains(first(other), "tokenized or split differently"));
  EXPECT_TRUE(contains(first(run({}, 5'000'000)), "over the track's budget of 4000000"));
  EXPECT_TRUE(contains(first(run({"train.steps=1000"})), "2048000 training tokens"));
  // 2^17 steps of 2^20 x 2^20 x 128 tokens is 2^64, which a plain int64 product wraps to 0.
  bool over = false;
  for (const std::string& p : entry_problems(t, run({"train.steps=131072", "train.micro_batches=1048576",
                                                      "train.micro_batch_size=1048576"})))
    over = over || contains(p, "9223372036854775807 training tokens");
  EXPECT_TRUE(over);
  EXPECT_TRUE(contains(first(run({"train.eval_batches=4"})), "evaluates 32 sequences of 128"));
  EXPECT_TRUE(contains(first(run({"data.seq_len=64"})), "evaluates 64 sequences of 64"));
  EXPECT_TRUE(contains(first(run({"model.init_sha256=" + std::string(64, 'a')})),
                       "starts from given weights"));
  EXPECT_TRUE(contains(first(run({"train.choice_eval_sha256=" + std::string(64, 'b')})),
                       "scores a multiple-choice evaluation"));
  witness::RunMeta forged = run({});
  forged.committed_yaml += "extra: 1\n";
  EXPECT_FALSE(entry_problems(t, forged).empty());
}

TEST(Tracks, TheShippedConfigsFitTheShippedTracks) {
  const auto tracks = load_tracks(std::filesystem::path(WIT_SOURCE_DIR) / "configs/board/tracks.yaml");
  const std::vector<std::pair<std::string, std::pair<std::string, uint64_t>>> cases = {
      {"kjv-tiny", {"tiny", 3'290'880}}, {"gpt2-124m-kjv", {"gpt2-124m-kjv", 124'439'808}}};
  for (const auto& [id, c] : cases) {
    const auto t = std::find_if(tracks.begin(), tracks.end(), [&](const Track& x) { return x.id == id; });
    ASSERT_NE(t, tracks.end()) << id;
    auto cfg = config::Config::load(
        std::filesystem::path(WIT_SOURCE_DIR) / "configs" / (c.first + ".yaml"), run_schema());
    if (cfg.get_string("model.attention") == "auto") cfg.set("model.attention", "math", "test");
    witness::RunMeta m;
    m.committed_yaml = committed_yaml(cfg);
    m.manifest_root = t->manifest_root;
    m.data_layout = t->data_layout;
    m.num_params = c.second;
    const auto problems = entry_problems(*t, m);
    EXPECT_TRUE(problems.empty()) << id << ": " << problems.front();
  }
}

}  // namespace
}  // namespace wit::board
