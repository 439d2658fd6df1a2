// What the board's records are named and dated with.
#pragma once

#include <cstddef>
#include <string>

#include "core/clock.h"
#include "core/sha256.h"

namespace wit::board {

// `bytes` bytes from the system's random source, as hex.
std::string random_hex(size_t bytes);
// 32 bytes from the system's random source: a key nothing a client sent can steer.
Digest random_key();
// Uniform in [0, 1) from the system's random source.
double random_unit();
using wit::utc_now;  // core/clock.h

}  // namespace wit::board
