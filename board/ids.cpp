#include "board/ids.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "core/error.h"
#include "core/sha256.h"

namespace wit::board {

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot draw random bytes from the system: {}", std::strerror(errno));
    got += size_t(n);
  }
  return to_hex(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
}

Digest random_key() { return digest_from_hex(random_hex(32), "random key"); }

double random_unit() {
  const Digest k = random_key();
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | k[size_t(i)];
  return double(v >> 11) * 0x1.0p-53;
}

}  // namespace wit::board
