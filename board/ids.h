// What the board's records are named and dated with.
#pragma once

#include <cstddef>
#include <string>

#include "core/clock.h"

namespace wit::board {

// `bytes` bytes from the system's random source, as hex.
std::string random_hex(size_t bytes);
using wit::utc_now;  // core/clock.h

}  // namespace wit::board
