// TensorBoard event files for a run's scalars (loss, learning rate, gradient norm, tokens/s,
// MFU, val loss), written beside metrics.jsonl so that `tensorboard --logdir runs/` shows every
// run. The format is TensorBoard's own: records of a length, the data and their masked CRC-32Cs,
// each record an Event protocol buffer (written out by hand here: no protobuf library). Output
// only: nothing in it is committed or read back.
//
//   EventFileWriter tb("runs/tiny/tensorboard");
//   tb.scalar("train/loss", 10, 2.96, unix_seconds);
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace wit {

// CRC-32C (Castagnoli), as TFRecord files check their records.
uint32_t crc32c(std::string_view bytes);

class EventFileWriter {
 public:
  // Creates `dir` and a new events.out.tfevents.<seconds>.<host>.<pid> file in it (a resumed run
  // adds a file; TensorBoard reads them all).
  explicit EventFileWriter(const std::filesystem::path& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void scalar(const std::string& tag, int64_t step, double value, double wall_time);
  const std::filesystem::path& path() const { return path_; }

 private:
  void record(const std::string& event);
  std::FILE* f_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace wit
