// Config: YAML files of `section: {key: value}`, plus `--set section.key=value` overrides,
// checked against a schema that each program declares. Parsed once at the edge; components
// receive their own typed structs built from it, never the YAML.
//
//   config::Schema s;
//   s.add_int("train", "steps", 1000, "optimizer steps", 1);
//   config::Config c = config::Config::load("configs/tiny.yaml", s, {"train.steps=20"});
//   int64_t steps = c.get_int("train.steps");
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wit::config {

enum class Type { Int, Float, Bool, String };

struct Key {
  std::string path;  // "section.key"
  Type type = Type::Int;
  std::string default_value;  // as YAML scalar text
  std::string help;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // for strings: allowed values, empty means any
};

class Schema {
 public:
  void add_int(const std::string& section, const std::string& name, int64_t def,
               const std::string& help, double min = -1e300, double max = 1e300);
  void add_float(const std::string& section, const std::string& name, double def,
                 const std::string& help, double min = -1e300, double max = 1e300);
  void add_bool(const std::string& section, const std::string& name, bool def,
                const std::string& help);
  void add_string(const std::string& section, const std::string& name, const std::string& def,
                  const std::string& help, std::vector<std::string> choices = {});

  const Key* find(const std::string& path) const;
  const std::vector<Key>& keys() const { return keys_; }
  // The valid key closest in spelling to `path`, for "did you mean" messages.
  std::string closest(const std::string& path) const;
  // Every key with its type, default and help: for `--help` and docs.
  std::string describe() const;

 private:
  Key& add_key(const std::string& section, const std::string& name, Type type, std::string def,
               const std::string& help, double min = -1e300, double max = 1e300);
  std::vector<Key> keys_;
};

class Config {
 public:
  // Reads `file`, applies `overrides` ("section.key=value"), validates everything against
  // `schema`. Errors name the file, the key, and the closest valid key.
  static Config load(const std::filesystem::path& file, const Schema& schema,
                     const std::vector<std::string>& overrides = {});
  static Config parse(const std::string& yaml_text, const std::string& origin, const Schema& schema,
                      const std::vector<std::string>& overrides = {});

  // Replaces one key's value, checked against the schema like a --set (`origin` names who sets
  // it in errors): how a value resolved at start-up (an "auto") enters the config.
  void set(const std::string& path, const std::string& value, const std::string& origin);

  int64_t get_int(const std::string& path) const;
  double get_float(const std::string& path) const;
  bool get_bool(const std::string& path) const;
  const std::string& get_string(const std::string& path) const;

  // The resolved config: every schema key, in schema order, defaults filled in.
  // Deterministic text: the same config always gives the same bytes.
  std::string to_yaml() const;
  // The same without some keys: "section.key", or "section." for a whole section.
  std::string to_yaml(const std::vector<std::string>& exclude) const;
  // Keys whose values differ between two configs, as "key: a -> b" lines.
  std::vector<std::string> differences(const Config& other,
                                       const std::vector<std::string>& prefixes) const;

 private:
  const Schema* schema_ = nullptr;
  std::map<std::string, std::string> values_;  // path -> canonical scalar text
  const std::string& raw(const std::string& path, Type type) const;
};

}  // namespace wit::config
