// The wall clock as records state it: logs, certificates and the board's rows.
#pragma once

#include <string>

namespace wit {

// Now, ISO 8601 UTC to the second: "2026-12-03T23:59:00Z".
std::string utc_now();
// Now, seconds since the Unix epoch (fractional).
double unix_now();

}  // namespace wit
