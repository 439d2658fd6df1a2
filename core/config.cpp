#include "core/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"

namespace wit::config {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Int:
      return "integer";
    case Type::Float:
      return "number";
    case Type::Bool:
      return "boolean";
    case Type::String:
      return "string";
  }
  return "?";
}

std::string format_float(double v) {
  // Shortest text that reads back to the same double: the resolved config must round-trip.
  for (int prec = 1; prec <= 17; ++prec) {
    std::string s = fmt::format("{:.{}g}", v, prec);
    if (std::strtod(s.c_str(), nullptr) == v) {
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
  }
  return fmt::format("{:.17g}", v);
}

// Parses `text` as `key`'s type and returns the canonical text, or throws naming `where`.
std::string canonical(const Key& key, const std::string& text, const std::string& where) {
  auto bad = [&](const std::string& why) -> std::string {
    fail("{}: {} = '{}' {}", where, key.path, text, why);
  };
  switch (key.type) {
    case Type::Int: {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno == ERANGE) return bad("is not an integer");
      if (v < key.min || v > key.max)
        return bad(fmt::format("is out of range [{}, {}]", key.min, key.max));
      return std::to_string(v);
    }
    case Type::Float: {
      errno = 0;
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
        return bad("is not a finite number");
      if (v < key.min || v > key.max)
        return bad(fmt::format("is out of range [{}, {}]", key.min, key.max));
      return format_float(v);
    }
    case Type::Bool:
      if (text == "true" || text == "True" || text == "yes" || text == "on") return "true";
      if (text == "false" || text == "False" || text == "no" || text == "off") return "false";
      return bad("is not true or false");
    case Type::String:
      if (!key.choices.empty() &&
          std::find(key.choices.begin(), key.choices.end(), text) == key.choices.end()) {
        std::string all;
        for (auto& c : key.choices) all += (all.empty() ? "" : ", ") + c;
        return bad(fmt::format("is not one of: {}", all));
      }
      return text;
  }
  return text;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Schema

Key& Schema::add_key(const std::string& section, const std::string& name, Type type,
                     std::string def, const std::string& help, double min, double max) {
  Key k;
  k.path = section + "." + name;
  k.type = type;
  k.default_value = std::move(def);
  k.help = help;
  k.min = min;
  k.max = max;
  keys_.push_back(std::move(k));
  return keys_.back();
}

void Schema::add_int(const std::string& section, const std::string& name, int64_t def,
                     const std::string& help, double min, double max) {
  add_key(section, name, Type::Int, std::to_string(def), help, min, max);
}
void Schema::add_float(const std::string& section, const std::string& name, double def,
                       const std::string& help, double min, double max) {
  add_key(section, name, Type::Float, format_float(def), help, min, max);
}
void Schema::add_bool(const std::string& section, const std::string& name, bool def,
                      const std::string& help) {
  add_key(section, name, Type::Bool, def ? "true" : "false", help);
}
void Schema::add_string(const std::string& section, const std::string& name, const std::string& def,
                        const std::string& help, std::vector<std::string> choices) {
  add_key(section, name, Type::String, def, help).choices = std::move(choices);
}

const Key* Schema::find(const std::string& path) const {
  for (auto& k : keys_)
    if (k.path == path) return &k;
  return nullptr;
}

std::string Schema::closest(const std::string& path) const {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (auto& k : keys_) {
    // Also compare the bare key name, so `train.lr` suggests `optim.lr`.
    std::string name = k.path.substr(k.path.find('.') + 1);
    std::string bare = path.substr(path.find('.') == std::string::npos ? 0 : path.find('.') + 1);
    size_t d = std::min(edit_distance(path, k.path), edit_distance(bare, name) + 1);
    if (d < best_d) best_d = d, best = k.path;
  }
  return best;
}

std::string Schema::describe() const {
  std::string out, section;
  for (auto& k : keys_) {
    std::string s = k.path.substr(0, k.path.find('.'));
    if (s != section) out += fmt::format("{}{}:\n", out.empty() ? "" : "\n", section = s);
    std::string extra;
    if (!k.choices.empty()) {
      for (auto& c : k.choices) extra += (extra.empty() ? " {" : "|") + c;
      extra += "}";
    }
    out += fmt::format("  {:<22} {:<8} default {:<10} {}{}\n", k.path.substr(s.size() + 1),
                       type_name(k.type), k.default_value.empty() ? "''" : k.default_value, k.help,
                       extra);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Config

Config Config::load(const std::filesystem::path& file, const Schema& schema,
                    const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) fail("config file {} does not exist", file.string());
  if (!std::filesystem::is_regular_file(file, ec))
    fail("config file {} is not a regular file (a directory?): give a YAML file", file.string());
  const std::string text = read_text_file(file);
  // A file with no settings at all is a mistake (a truncated copy, the wrong file), not a request
  // for every default.
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return parse(text, file.string(), schema, overrides);  // parse() reports the syntax error
  }
  if (!root || root.IsNull() || (root.IsMap() && root.size() == 0))
    fail("config file {} is empty: it sets no keys (see `wit train --help`)", file.string());
  return parse(text, file.string(), schema, overrides);
}

Config Config::parse(const std::string& yaml_text, const std::string& origin, const Schema& schema,
                     const std::vector<std::string>& overrides) {
  Config c;
  c.schema_ = &schema;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    fail("{}: invalid YAML at line {}, column {}: {}", origin, e.mark.line + 1, e.mark.column + 1,
         e.msg);
  }
  auto unknown = [&](const std::string& path, const std::string& where) {
    fail("{}: unknown config key '{}' (did you mean '{}'?)", where, path, schema.closest(path));
  };
  if (root && !root.IsNull()) {
    if (!root.IsMap())
      fail("{}: expected a mapping of sections (model:, data:, train:, ...)", origin);
    std::map<std::string, int> seen;  // YAML allows a key twice; which one wins is a guess
    auto once = [&](const std::string& path, const YAML::Node& at) {
      const int line = at.Mark().line + 1;
      auto [it, fresh] = seen.emplace(path, line);
      if (!fresh)
        fail("{} (line {}): '{}' is set twice (also on line {}): remove one", origin, line, path,
             it->second);
    };
    for (auto sec : root) {
      if (!sec.first.IsScalar()) fail("{}: section names must be plain words", origin);
      std::string section = sec.first.as<std::string>();
      once(section, sec.first);
      if (!sec.second.IsMap()) {
        if (sec.second.IsNull()) continue;
        fail("{}: section '{}' must be a mapping of keys", origin, section);
      }
      for (auto kv : sec.second) {
        if (!kv.first.IsScalar())
          fail("{} (line {}): keys of section '{}' must be plain words", origin,
               kv.first.Mark().line + 1, section);
        std::string path = section + "." + kv.first.as<std::string>();
        once(path, kv.first);
        const Key* key = schema.find(path);
        if (!key) unknown(path, fmt::format("{} (line {})", origin, kv.first.Mark().line + 1));
        if (!kv.second.IsScalar())
          fail("{} (line {}): {} must be a single value", origin, kv.first.Mark().line + 1, path);
        c.values_[path] = canonical(*key, kv.second.Scalar(),
                                    fmt::format("{} (line {})", origin, kv.first.Mark().line + 1));
      }
    }
  }
  for (auto& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) fail("--set {}: expected section.key=value", o);
    std::string path = o.substr(0, eq);
    const Key* key = schema.find(path);
    if (!key) unknown(path, "--set");
    c.values_[path] = canonical(*key, o.substr(eq + 1), "--set");
  }
  for (auto& k : schema.keys())
    if (!c.values_.count(k.path)) c.values_[k.path] = k.default_value;
  return c;
}

void Config::set(const std::string& path, const std::string& value, const std::string& origin) {
  const Key* key = schema_ ? schema_->find(path) : nullptr;
  WIT_CHECK(key, "{} sets unknown config key {}", origin, path);
  values_[path] = canonical(*key, value, origin);
}

const std::string& Config::raw(const std::string& path, Type type) const {
  const Key* key = schema_ ? schema_->find(path) : nullptr;
  WIT_CHECK(key && key->type == type, "config key {} read as {}", path, type_name(type));
  return values_.at(path);
}

int64_t Config::get_int(const std::string& path) const {
  return std::strtoll(raw(path, Type::Int).c_str(), nullptr, 10);
}
double Config::get_float(const std::string& path) const {
  return std::strtod(raw(path, Type::Float).c_str(), nullptr);
}
bool Config::get_bool(const std::string& path) const { return raw(path, Type::Bool) == "true"; }
const std::string& Config::get_string(const std::string& path) const {
  return raw(path, Type::String);
}

std::string Config::to_yaml() const { return to_yaml({}); }

std::string Config::to_yaml(const std::vector<std::string>& exclude) const {
  auto excluded = [&](const std::string& path) {
    for (auto& e : exclude)
      if (path == e || (!e.empty() && e.back() == '.' && path.rfind(e, 0) == 0)) return true;
    return false;
  };
  // Sections in order of their first key; a schema may interleave them.
  std::vector<std::string> sections;
  for (auto& k : schema_->keys()) {
    std::string s = k.path.substr(0, k.path.find('.'));
    if (std::find(sections.begin(), sections.end(), s) == sections.end()) sections.push_back(s);
  }
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (auto& s : sections) {
    bool open = false;
    for (auto& k : schema_->keys()) {
      if (excluded(k.path) || k.path.compare(0, s.size() + 1, s + ".") != 0) continue;
      if (!open) out << YAML::Key << s << YAML::Value << YAML::BeginMap;
      open = true;
      const std::string& v = values_.at(k.path);
      out << YAML::Key << k.path.substr(s.size() + 1) << YAML::Value;
      if (k.type == Type::String)
        out << YAML::DoubleQuoted << v;
      else
        out << v;
    }
    if (open) out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> Config::differences(const Config& other,
                                             const std::vector<std::string>& prefixes) const {
  std::vector<std::string> out;
  for (auto& k : schema_->keys()) {
    bool match = prefixes.empty();
    for (auto& p : prefixes) match |= k.path.rfind(p, 0) == 0;
    if (!match) continue;
    auto a = values_.find(k.path), b = other.values_.find(k.path);
    std::string va = a == values_.end() ? "(unset)" : a->second;
    std::string vb = b == other.values_.end() ? "(unset)" : b->second;
    if (va != vb) out.push_back(fmt::format("{}: {} -> {}", k.path, va, vb));
  }
  return out;
}

}  // namespace wit::config
