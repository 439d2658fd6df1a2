// What the board's records are named and dated with.
#pragma once

#include <cstddef>
#include <string>

namespace wit::board {

// `bytes` bytes from the system's random source, as hex.
std::string random_hex(size_t bytes);
// Now, ISO 8601 UTC to the second: "2026-12-03T23:59:00Z".
std::string utc_now();

}  // namespace wit::board
