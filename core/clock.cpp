#include "core/clock.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>

namespace wit {

std::string utc_now() { return utc_at(std::time(nullptr)); }

std::string utc_at(int64_t unix_seconds) {
  const std::time_t t = std::time_t(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string format_duration(double s) {
  // Durations may come from a log a trainer wrote: never convert what no int can hold.
  if (!(s >= 0) || std::isinf(s)) return "?";
  if (s >= 1e9) return fmt::format("{:.3g}s", s);
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

}  // namespace wit
