#include "trainer/tensorboard.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace wit {

namespace {

const std::array<uint32_t, 256>& crc32c_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

uint32_t masked_crc(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Protocol-buffer wire format: the few field kinds an Event of scalars needs.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out += char(uint8_t(v));
}
template <typename T>
void fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian, as on every machine wit runs on
  out.append(b, sizeof(T));
}
void key(std::string& out, int field, int wire_type) { varint(out, uint64_t(field) << 3 | uint64_t(wire_type)); }
void bytes_field(std::string& out, int field, std::string_view v) {
  key(out, field, 2);
  varint(out, v.size());
  out.append(v);
}

// Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
std::string event(double wall_time, int64_t step) {
  std::string e;
  key(e, 1, 1);
  fixed(e, wall_time);
  key(e, 2, 0);
  varint(e, uint64_t(step));
  return e;
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  const auto& t = crc32c_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = t[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot create {}: {}", dir.string(), ec.message());
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  path_ = dir / fmt::format("events.out.tfevents.{}.{}.{}", int64_t(now), host, getpid());
  f_ = std::fopen(path_.c_str(), "ab");
  if (!f_) fail("cannot open {} for writing: {}", path_.string(), std::strerror(errno));
  std::string e;
  key(e, 1, 1);
  fixed(e, now);
  bytes_field(e, 3, "brain.Event:2");
  record(e);
}

EventFileWriter::~EventFileWriter() {
  if (f_) std::fclose(f_);
}

void EventFileWriter::scalar(const std::string& tag, int64_t step, double value, double wall_time) {
  // Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
  std::string v;
  bytes_field(v, 1, tag);
  key(v, 2, 5);
  fixed(v, float(value));
  std::string summary;
  bytes_field(summary, 1, v);
  std::string e = event(wall_time, step);
  bytes_field(e, 5, summary);
  record(e);
}

void EventFileWriter::record(const std::string& data) {
  std::string r;
  fixed(r, uint64_t(data.size()));
  fixed(r, masked_crc(std::string_view(r.data(), 8)));
  r += data;
  fixed(r, masked_crc(data));
  if (std::fwrite(r.data(), 1, r.size(), f_) != r.size() || std::fflush(f_) != 0)
    fail("cannot write {}: {}", path_.string(), std::strerror(errno));
}

}  // namespace wit
