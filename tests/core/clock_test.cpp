// Durations as progress lines print them, including those a trainer's log could hold.
#include "core/clock.h"

#include <gtest/gtest.h>

#include <limits>

namespace wit {
namespace {

TEST(Clock, format_duration_prints_seconds_minutes_and_hours) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(187), "3m07s");
  EXPECT_EQ(format_duration(2 * 3600 + 15 * 60 + 59), "2h15m");
}

// Step times come from the witness log, which its trainer wrote: none may be converted to an
// int that cannot hold it.
TEST(Clock, format_duration_takes_any_double) {
  EXPECT_EQ(format_duration(std::numeric_limits<double>::quiet_NaN()), "?");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(-std::numeric_limits<double>::infinity()), "?");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "?");
  EXPECT_EQ(format_duration(1e300), "1e+300s");
  EXPECT_EQ(format_duration(999'999'999), "277777h46m");
}

TEST(Clock, utc_now_is_iso_8601_to_the_second) {
  const std::string now = utc_now();
  ASSERT_EQ(now.size(), 20u) << now;
  EXPECT_EQ(now[4], '-');
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now.back(), 'Z');
}

}  // namespace
}  // namespace wit
