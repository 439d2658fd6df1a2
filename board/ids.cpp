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

}  // namespace wit::board
