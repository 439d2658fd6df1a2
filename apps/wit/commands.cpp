#include "apps/wit/commands.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>

#include "core/sha256.h"
#include "trainer/data/prepare.h"
#include "trainer/run_config.h"
#include "trainer/train_loop.h"

namespace wit::cli {

namespace {

std::map<CLI::App*, std::function<int()>>& actions() {
  static std::map<CLI::App*, std::function<int()>> a;
  return a;
}

}  // namespace

void add_prepare(CLI::App& app) {
  auto o = std::make_shared<data::PrepareOptions>();
  auto* sub = app.add_subcommand(
      "prepare",
      "Tokenize a corpus into llm.c-format shards (train and val) with a manifest of every "
      "document's SHA-256 and a Merkle root over them.");
  sub->add_option("input", o->input,
                  "A text file (documents separated by lines '<|endoftext|>'), a directory of "
                  "text files, a .jsonl file, or llm.c .bin shards. Omitted: the built-in King "
                  "James Bible (Debian package bible-kjv), one document per chapter.");
  sub->add_option("--out,-o", o->out, "Output directory")->required();
  sub->add_option("--format", o->format, "Input format")
      ->check(CLI::IsMember({"auto", "text", "dir", "jsonl", "kjv", "llmc"}))
      ->capture_default_str();
  sub->add_option("--text-field", o->text_field, "JSONL field holding the text")
      ->capture_default_str();
  sub->add_option("--val-fraction", o->val_fraction, "Fraction of documents held out")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of the held-out split")->capture_default_str();
  sub->add_option("--shard-tokens", o->shard_tokens, "Maximum tokens per shard")
      ->check(CLI::Range(uint64_t(1024), uint64_t(1) << 40))
      ->capture_default_str();
  sub->add_flag("--force", o->force, "Replace an existing prepared dataset in --out");
  actions()[sub] = [o] {
    auto r = data::prepare(*o, [](const std::string& msg) {
      fmt::print("{}\n", msg);
      std::fflush(stdout);
    });
    fmt::print(
        "prepared {}: {} documents ({} train, {} val, {} empty skipped), {} train tokens, "
        "{} val tokens in {} shards\nmanifest root {}\n",
        o->out.string(), r.documents, r.train_documents, r.val_documents, r.skipped_empty,
        r.train_tokens, r.val_tokens, r.shards.size(), to_hex(r.root));
    return 0;
  };
}

void add_train(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  auto* sub = app.add_subcommand(
      "train",
      "Train a GPT from a YAML config. The run directory receives config.yaml (resolved), "
      "metrics.jsonl, checkpoints/ and, at the end, model.safetensors (Hugging Face GPT-2 "
      "names).");
  sub->add_option("config", o->config, "YAML config, e.g. configs/tiny.yaml");
  sub->add_option("--out,-o", o->run_dir, "Run directory (default runs/<config name>)");
  sub->add_option("--set", o->overrides,
                  "Override a config key: --set section.key=value (repeatable)");
  sub->add_option("--resume", o->run_dir,
                  "Continue the run in this directory from its latest checkpoint, bit for bit");
  sub->add_option("--until", o->until,
                  "Stop after this many steps with a checkpoint, as if interrupted");
  sub->add_flag("--quiet,-q", o->quiet, "No progress lines");
  sub->footer("Config keys (YAML sections; all have defaults):\n" + run_schema().describe());
  actions()[sub] = [o, sub] {
    o->resume = sub->count("--resume") > 0;
    if (o->resume && !o->config.empty())
      throw CLI::ValidationError("--resume", "takes the run directory; do not also give a config");
    if (!o->resume && o->config.empty()) throw CLI::RequiredError("config (or --resume RUN)");
    auto s = train(*o);
    if (!s.is_root) return 0;  // one summary per job
    fmt::print("run {}: {} steps, last loss {:.4f}, val loss {:.4f}\n  checkpoint {}\n",
               s.run_dir.string(), s.steps_done, s.last_loss, s.val_loss, s.checkpoint.string());
    if (!s.model_file.empty()) fmt::print("  model      {}\n", s.model_file.string());
    return 0;
  };
}

void add_config(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("config",
                                 "Print a config fully resolved (every key, defaults filled in), "
                                 "or every key with its meaning when no file is given.");
  sub->add_option("config", *file, "YAML config");
  sub->add_option("--set", *sets, "Override a key: --set section.key=value");
  actions()[sub] = [file, sets] {
    if (file->empty()) {
      fmt::print("{}", run_schema().describe());
      return 0;
    }
    auto c = config::Config::load(*file, run_schema(), *sets);
    run_config_from(c);  // relations between keys
    fmt::print("{}", c.to_yaml());
    return 0;
  };
}

int run_selected(CLI::App& app) {
  for (auto* sub : app.get_subcommands())
    if (auto it = actions().find(sub); it != actions().end()) return it->second();
  return 2;
}

}  // namespace wit::cli
