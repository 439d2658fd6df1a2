#include "trainer/metrics_file.h"

#include <fstream>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json.h"

namespace wit {

namespace fs = std::filesystem;

namespace {

// TensorBoard groups tags by their prefix: training, evaluation, checkpoints, the device.
std::string tensorboard_tag(const std::string& name) {
  if (name == "val_loss") return "val/loss";
  if (name.rfind("choice_", 0) == 0) return "choice/" + name.substr(7);
  if (name.rfind("checkpoint", 0) == 0 || name.rfind("peak_", 0) == 0) return "system/" + name;
  return "train/" + name;
}

}  // namespace

MetricsFile::MetricsFile(const fs::path& p, bool enabled)
    : f_(enabled ? std::fopen(p.c_str(), "a") : nullptr), path_(p) {
  if (enabled && !f_) fail("cannot open {} for writing", p.string());
  if (enabled) events_ = std::make_unique<EventFileWriter>(p.parent_path() / "tensorboard");
}

MetricsFile::~MetricsFile() {
  if (f_) std::fclose(f_);
}

void MetricsFile::write(const nlohmann::json& j) {
  if (!f_) return;
  const std::string s = j.dump() + "\n";
  write_all(f_, s.data(), s.size(), path_);
  std::fflush(f_);
  const double now = unix_now();
  for (const auto& [name, value] : j.items())
    if (name != "step" && value.is_number())
      events_->scalar(tensorboard_tag(name), j["step"].get<int64_t>(), value.get<double>(), now);
}

void truncate_metrics(const fs::path& file, int64_t step) {
  if (!fs::exists(file)) return;
  std::ifstream in(file);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = parse_untrusted_json(line);
    if (!j.is_discarded() && j.contains("step") && j["step"].get<int64_t>() > step) continue;
    kept += line + "\n";
  }
  write_file_atomic(file, kept);
}

float last_logged(const fs::path& file, const char* key) {
  std::ifstream in(file);
  std::string line;
  float value = 0;
  while (std::getline(in, line)) {
    auto j = parse_untrusted_json(line);
    if (!j.is_discarded() && j.contains(key)) value = j[key].get<float>();
  }
  return value;
}

}  // namespace wit
