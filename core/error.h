// Errors: one exception type that carries a one-line, user-facing message.
// Thrown anywhere below, caught once in main, printed, and turned into a non-zero exit.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace wit {

// A failure the user can act on: bad input, bad config, a file that is missing or corrupt.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// An Error every process of a job raised at the same point (the processes agreed on it): each
// exits non-zero, and only the one with `report()` prints it.
class SharedError : public Error {
 public:
  SharedError(const std::string& what, bool report) : Error(what), report_(report) {}
  bool report() const { return report_; }

 private:
  bool report_;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// Invariant checks: for bugs, not for user input.
#define WIT_CHECK(cond, ...)                                                            \
  do {                                                                                  \
    if (!(cond))                                                                        \
      throw ::wit::Error(fmt::format("internal error at {}:{}: {}", __FILE__, __LINE__, \
                                     fmt::format(__VA_ARGS__)));                        \
  } while (0)

}  // namespace wit
