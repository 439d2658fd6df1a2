// What a run prints for people and tools, not for the record: metrics.jsonl (one JSON object per
// progress line, evaluation and checkpoint) and the same scalars as TensorBoard event files in
// RUN/tensorboard/. Never committed: the witness log is the record.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "trainer/tensorboard.h"

namespace wit {

// Appended by rank 0 only; on other ranks (enabled = false) writes are dropped.
class MetricsFile {
 public:
  MetricsFile(const std::filesystem::path& p, bool enabled);
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  // One line; each number but "step" also as a TensorBoard scalar at j["step"].
  void write(const nlohmann::json& j);

 private:
  std::FILE* f_;
  std::filesystem::path path_;
  std::unique_ptr<EventFileWriter> events_;
};

// Drops the lines past `step`: a stretch of training that a resume redoes.
void truncate_metrics(const std::filesystem::path& file, int64_t step);
// The last value logged under `key` (0 when none).
float last_logged(const std::filesystem::path& file, const char* key);

}  // namespace wit
