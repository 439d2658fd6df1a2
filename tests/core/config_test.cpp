// Config: schema checks with "did you mean", range checks, --set overrides, YAML errors with
// line numbers, and a resolved config that reads back to itself.
#include "core/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "tests/data/temp_dir.h"

namespace wit::config {
namespace {

using wit::testing::error_of;

Schema test_schema() {
  Schema s;
  s.add_int("train", "steps", 1000, "optimizer steps", 1);
  s.add_int("train", "micro_batches", 8, "micro-batches per step", 1, 4096);
  s.add_float("optim", "lr", 6e-4, "peak learning rate", 0, 1);
  s.add_bool("train", "witness", true, "record a witness");
  s.add_string("data", "dir", "data/kjv", "prepared data dir");
  s.add_string("dist", "reduction", "canonical", "gradient reduction", {"canonical", "fast"});
  return s;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Config, defaults_fill_unset_keys) {
  Schema s = test_schema();
  Config c = Config::parse("train:\n  steps: 20\n", "test.yaml", s);
  EXPECT_EQ(c.get_int("train.steps"), 20);
  EXPECT_EQ(c.get_int("train.micro_batches"), 8);
  EXPECT_DOUBLE_EQ(c.get_float("optim.lr"), 6e-4);
  EXPECT_TRUE(c.get_bool("train.witness"));
  EXPECT_EQ(c.get_string("dist.reduction"), "canonical");
}

TEST(Config, unknown_key_suggests_the_closest_key) {
  Schema s = test_schema();
  std::string msg = error_of([&] { Config::parse("train:\n  stpes: 5\n", "run.yaml", s); });
  EXPECT_TRUE(contains(msg, "unknown config key 'train.stpes' (did you mean 'train.steps'?)"))
      << msg;
  EXPECT_TRUE(contains(msg, "run.yaml (line 2)")) << msg;
  // A key under the wrong section is found by its bare name.
  msg = error_of([&] { Config::parse("train:\n  lr: 0.1\n", "run.yaml", s); });
  EXPECT_TRUE(contains(msg, "did you mean 'optim.lr'")) << msg;
}

TEST(Config, out_of_range_values_are_rejected) {
  Schema s = test_schema();
  std::string msg = error_of([&] { Config::parse("train:\n  steps: 0\n", "r.yaml", s); });
  EXPECT_TRUE(contains(msg, "train.steps = '0' is out of range")) << msg;
  msg = error_of([&] { Config::parse("optim:\n  lr: 2.5\n", "r.yaml", s); });
  EXPECT_TRUE(contains(msg, "optim.lr = '2.5' is out of range")) << msg;
  msg = error_of([&] { Config::parse("train:\n  steps: many\n", "r.yaml", s); });
  EXPECT_TRUE(contains(msg, "is not an integer")) << msg;
  msg = error_of([&] { Config::parse("dist:\n  reduction: ring\n", "r.yaml", s); });
  EXPECT_TRUE(contains(msg, "is not one of: canonical, fast")) << msg;
}

TEST(Config, set_overrides_are_applied_and_checked) {
  Schema s = test_schema();
  Config c = Config::parse("train:\n  steps: 20\n", "r.yaml", s,
                           {"train.steps=30", "optim.lr=0.001", "train.witness=false"});
  EXPECT_EQ(c.get_int("train.steps"), 30);
  EXPECT_DOUBLE_EQ(c.get_float("optim.lr"), 0.001);
  EXPECT_FALSE(c.get_bool("train.witness"));
  std::string msg = error_of([&] { Config::parse("", "r.yaml", s, {"train.step=3"}); });
  EXPECT_TRUE(contains(msg, "unknown config key 'train.step' (did you mean 'train.steps'?)"))
      << msg;
  msg = error_of([&] { Config::parse("", "r.yaml", s, {"train.steps=-1"}); });
  EXPECT_TRUE(contains(msg, "out of range")) << msg;
  EXPECT_THROW(Config::parse("", "r.yaml", s, {"train.steps"}), Error);
}

TEST(Config, bad_yaml_reports_the_line) {
  Schema s = test_schema();
  std::string msg =
      error_of([&] { Config::parse("train:\n  steps: 1\n   bad: : x\n", "broken.yaml", s); });
  EXPECT_TRUE(contains(msg, "broken.yaml: invalid YAML at line 3")) << msg;
}

TEST(Config, load_reads_files_and_names_missing_ones) {
  wit::testing::TempDir dir;
  Schema s = test_schema();
  {
    std::ofstream f(dir / "c.yaml");
    f << "train:\n  steps: 7\n";
  }
  EXPECT_EQ(Config::load(dir / "c.yaml", s).get_int("train.steps"), 7);
  std::string msg = error_of([&] { Config::load(dir / "none.yaml", s); });
  EXPECT_TRUE(contains(msg, "does not exist")) << msg;
}

TEST(Config, load_refuses_a_directory_an_empty_file_and_duplicate_keys) {
  wit::testing::TempDir dir;
  Schema s = test_schema();
  std::string msg = error_of([&] { Config::load(dir.path(), s); });
  EXPECT_TRUE(contains(msg, "is not a regular file")) << msg;
  for (const char* text : {"", "# nothing but a comment\n", "{}\n"}) {
    std::ofstream(dir / "empty.yaml") << text;
    msg = error_of([&] { Config::load(dir / "empty.yaml", s); });
    EXPECT_TRUE(contains(msg, "empty.yaml is empty: it sets no keys")) << text << ": " << msg;
  }
  msg = error_of([&] { Config::parse("train:\n  steps: 5\n  steps: 6\n", "dup.yaml", s); });
  EXPECT_TRUE(contains(msg, "dup.yaml (line 3): 'train.steps' is set twice (also on line 2)"))
      << msg;
  msg = error_of(
      [&] { Config::parse("train:\n  steps: 5\noptim:\n  lr: 0.1\ntrain:\n  steps: 6\n", "d", s); });
  EXPECT_TRUE(contains(msg, "'train' is set twice")) << msg;
}

TEST(Config, resolved_yaml_round_trips) {
  Schema s = test_schema();
  Config c = Config::parse("train:\n  steps: 20\noptim:\n  lr: 0.1\n", "r.yaml", s,
                           {"data.dir=/tmp/x y", "optim.lr=3e-4"});
  std::string yaml = c.to_yaml();
  Config again = Config::parse(yaml, "resolved", s);
  EXPECT_EQ(again.to_yaml(), yaml);
  EXPECT_TRUE(c.differences(again, {}).empty());
  EXPECT_EQ(again.get_string("data.dir"), "/tmp/x y");
  EXPECT_EQ(again.get_float("optim.lr"), 3e-4);  // exactly: shortest round-trip text
  Config other = Config::parse("", "d", s);
  std::vector<std::string> diff = c.differences(other, {"train."});
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0], "train.steps: 20 -> 1000");
}

}  // namespace
}  // namespace wit::config
