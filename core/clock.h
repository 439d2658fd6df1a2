// The wall clock as records state it (logs, certificates, the board's rows), and durations as
// progress lines print them.
#pragma once

#include <cstdint>
#include <string>

namespace wit {

// Now, ISO 8601 UTC to the second: "2026-12-03T23:59:00Z". Such strings sort as their times.
std::string utc_now();
// The same for a time given in seconds since the Unix epoch.
std::string utc_at(int64_t unix_seconds);
// Now, seconds since the Unix epoch (fractional).
double unix_now();
// "42s", "3m07s", "2h15m": how progress lines give durations and ETAs; "?" for a negative,
// infinite or NaN one, and seconds ("3.17e+12s") from 10^9 s on.
std::string format_duration(double seconds);

}  // namespace wit
