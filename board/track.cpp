#include "board/track.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "core/error.h"
#include "record/run_config.h"

namespace wit::board {

namespace {

// Errors point at the file and line of the node they are about.
struct Where {
  std::string file;
  std::string at(const YAML::Node& n) const {
    return n.Mark().line >= 0 ? fmt::format("{} (line {})", file, n.Mark().line + 1) : file;
  }
};

void only_keys(const Where& w, const YAML::Node& map, const std::string& what,
               const std::set<std::string>& allowed) {
  if (!map.IsMap()) fail("{}: {} must be a mapping", w.at(map), what);
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail("{}: unknown key '{}' in {} (expected {})", w.at(kv.first), key, what, list);
    }
  }
}

YAML::Node required(const Where& w, const YAML::Node& map, const std::string& key,
                    const std::string& what) {
  const YAML::Node n = map[key];
  if (!n) fail("{}: {} has no '{}'", w.at(map), what, key);
  return n;
}

std::string text(const Where& w, const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) fail("{}: {} must be a single value", w.at(n), what);
  return n.as<std::string>();
}

int64_t positive(const Where& w, const YAML::Node& n, const std::string& what) {
  const std::string s = text(w, n, what);
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(s) <= 0)
    fail("{}: {} = '{}' is not a positive integer", w.at(n), what, s);
  return std::stoll(s);
}

std::string one_of(const Where& w, const YAML::Node& n, const std::string& what,
                   const std::set<std::string>& allowed) {
  const std::string s = text(w, n, what);
  if (!allowed.count(s)) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail("{}: {} = '{}' (expected one of {})", w.at(n), what, s, list);
  }
  return s;
}

Track parse_track(const Where& w, const YAML::Node& n) {
  only_keys(w, n, "a track", {"id", "title", "dataset", "model", "budget", "eval"});
  Track t;
  t.id = text(w, required(w, n, "id", "a track"), "id");
  if (t.id.empty() || t.id.size() > 64 ||
      t.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
    fail("{}: track id '{}' must be 1 to 64 of a-z, 0-9 and '-'", w.at(n["id"]), t.id);
  const std::string what = fmt::format("track {}", t.id);
  t.title = text(w, required(w, n, "title", what), what + " title");

  const YAML::Node d = required(w, n, "dataset", what);
  only_keys(w, d, what + " dataset", {"manifest_root", "data_layout", "tokenizer"});
  const YAML::Node root = required(w, d, "manifest_root", what + " dataset");
  const YAML::Node layout = required(w, d, "data_layout", what + " dataset");
  try {
    t.manifest_root = digest_from_hex(text(w, root, "manifest_root"), "manifest_root");
    t.data_layout = digest_from_hex(text(w, layout, "data_layout"), "data_layout");
  } catch (const Error& e) {
    fail("{}: {}: {}", w.at(d), what, e.what());
  }
  t.tokenizer = one_of(w, required(w, d, "tokenizer", what + " dataset"), what + " tokenizer",
                       {"byte", "gpt2", "external"});

  const YAML::Node m = required(w, n, "model", what);
  only_keys(w, m, what + " model", {"family", "max_params"});
  t.family = one_of(w, required(w, m, "family", what + " model"), what + " family", {"gpt2"});
  t.max_params = positive(w, required(w, m, "max_params", what + " model"), what + " max_params");

  const YAML::Node b = required(w, n, "budget", what);
  only_keys(w, b, what + " budget", {"max_tokens"});
  t.max_tokens = positive(w, required(w, b, "max_tokens", what + " budget"), what + " max_tokens");

  const YAML::Node e = required(w, n, "eval", what);
  only_keys(w, e, what + " eval", {"split", "metric", "seq_len", "sequences"});
  t.split = one_of(w, required(w, e, "split", what + " eval"), what + " split", {"val"});
  t.metric = one_of(w, required(w, e, "metric", what + " eval"), what + " metric", {"loss"});
  t.eval_seq_len = positive(w, required(w, e, "seq_len", what + " eval"), what + " seq_len");
  t.eval_sequences =
      positive(w, required(w, e, "sequences", what + " eval"), what + " sequences");
  return t;
}

}  // namespace

std::vector<Track> load_tracks(const std::filesystem::path& file) {
  const Where w{file.string()};
  if (!std::filesystem::is_regular_file(file)) fail("tracks file {} does not exist", file.string());
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& e) {
    fail("{}: invalid YAML at line {}: {}", file.string(), e.mark.line + 1, e.msg);
  }
  if (!doc || !doc.IsMap()) fail("{}: expected a mapping with 'tracks'", file.string());
  only_keys(w, doc, "the tracks file", {"tracks"});
  const YAML::Node list = required(w, doc, "tracks", "the tracks file");
  if (!list.IsSequence() || list.size() == 0)
    fail("{}: 'tracks' must be a list of at least one track", w.at(list));
  std::vector<Track> out;
  std::set<std::string> ids;
  for (const auto& n : list) {
    Track t = parse_track(w, n);
    if (!ids.insert(t.id).second) fail("{}: track id '{}' appears twice", w.at(n), t.id);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> entry_problems(const Track& t, const witness::RunMeta& meta) {
  std::vector<std::string> out;
  if (meta.manifest_root != t.manifest_root)
    out.push_back(fmt::format("trained on dataset {}, the track's is {}",
                              to_hex(meta.manifest_root).substr(0, 16),
                              to_hex(t.manifest_root).substr(0, 16)));
  else if (meta.data_layout != t.data_layout)
    out.push_back(fmt::format(
        "the dataset's layout (splits, shards, tokens) is {}, the track's is {}: tokenized or "
        "split differently",
        to_hex(meta.data_layout).substr(0, 16), to_hex(t.data_layout).substr(0, 16)));
  RunConfig rc;
  try {
    rc = run_config_from(parse_committed(meta.committed_yaml, "the run's committed config"));
  } catch (const Error& e) {
    out.push_back(e.what());
    return out;
  }
  if (!rc.init.sha256.empty())
    out.push_back(fmt::format(
        "starts from given weights (model.init_sha256 {}): a board's workers cannot replay its "
        "first segment without them, and a board takes no weights beside a run",
        rc.init.sha256.substr(0, 16)));
  if (!rc.train.choice_eval_sha256.empty())
    out.push_back(fmt::format(
        "scores a multiple-choice evaluation (train.choice_eval_sha256 {}): a board's workers "
        "cannot rescore it without the file, and a board takes no files beside a run",
        rc.train.choice_eval_sha256.substr(0, 16)));
  if (int64_t(meta.num_params) > t.max_params)
    out.push_back(fmt::format("{} parameters, over the track's budget of {}", meta.num_params,
                              t.max_params));
  const int64_t tokens = rc.training_tokens();
  if (tokens > t.max_tokens)
    out.push_back(fmt::format("{} training tokens ({} steps x {}), over the track's budget of {}",
                              tokens, rc.train.steps, rc.tokens_per_step(), t.max_tokens));
  const int64_t sequences = rc.train.eval_batches * rc.train.micro_batch_size;
  if (rc.data.seq_len != t.eval_seq_len || sequences != t.eval_sequences)
    out.push_back(fmt::format(
        "evaluates {} sequences of {} tokens (train.eval_batches x train.micro_batch_size, "
        "data.seq_len); the track ranks on {} of {}",
        sequences, rc.data.seq_len, t.eval_sequences, t.eval_seq_len));
  return out;
}

nlohmann::json track_json(const Track& t) {
  return {{"id", t.id},
          {"title", t.title},
          {"dataset",
           {{"manifest_root", to_hex(t.manifest_root)},
            {"data_layout", to_hex(t.data_layout)},
            {"tokenizer", t.tokenizer}}},
          {"model", {{"family", t.family}, {"max_params", t.max_params}}},
          {"budget", {{"max_tokens", t.max_tokens}}},
          {"eval",
           {{"split", t.split},
            {"metric", t.metric},
            {"seq_len", t.eval_seq_len},
            {"sequences", t.eval_sequences}}}};
}

Track track_from_json(const nlohmann::json& j) {
  try {
    Track t;
    t.id = j.at("id").get<std::string>();
    t.title = j.at("title").get<std::string>();
    const auto& d = j.at("dataset");
    t.manifest_root = digest_from_hex(d.at("manifest_root").get<std::string>(), "manifest_root");
    t.data_layout = digest_from_hex(d.at("data_layout").get<std::string>(), "data_layout");
    t.tokenizer = d.at("tokenizer").get<std::string>();
    t.family = j.at("model").at("family").get<std::string>();
    t.max_params = j.at("model").at("max_params").get<int64_t>();
    t.max_tokens = j.at("budget").at("max_tokens").get<int64_t>();
    const auto& e = j.at("eval");
    t.split = e.at("split").get<std::string>();
    t.metric = e.at("metric").get<std::string>();
    t.eval_seq_len = e.at("seq_len").get<int64_t>();
    t.eval_sequences = e.at("sequences").get<int64_t>();
    return t;
  } catch (const nlohmann::json::exception& e) {
    fail("the board's track is not as documented: {}", e.what());
  }
}

}  // namespace wit::board
