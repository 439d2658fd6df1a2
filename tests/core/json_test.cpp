// JSON from others' bytes: parsed with its nesting bounded, since copying, comparing and
// printing a value recurse once per level.
#include "core/json.h"

#include <gtest/gtest.h>

#include <string>

namespace wit {
namespace {

std::string nested(int depth) { return std::string(size_t(depth), '[') + std::string(size_t(depth), ']'); }

TEST(UntrustedJson, NestingIsBounded) {
  EXPECT_FALSE(parse_untrusted_json(nested(kMaxJsonDepth)).is_discarded());
  EXPECT_TRUE(parse_untrusted_json(nested(kMaxJsonDepth + 1)).is_discarded());
  // Deep enough to overflow the stack of a dump() or a copy; refused without recursing.
  EXPECT_TRUE(parse_untrusted_json(nested(1'000'000)).is_discarded());
  const std::string objects = "{\"a\":" + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  EXPECT_TRUE(parse_untrusted_json<nlohmann::ordered_json>(objects).is_discarded());
}

TEST(UntrustedJson, OrdinaryJsonAndErrors) {
  const auto j = parse_untrusted_json(R"({"a": [1, {"b": "c"}], "d": null})");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["a"][1]["b"], "c");
  EXPECT_EQ(j.dump(), R"({"a":[1,{"b":"c"}],"d":null})");
  EXPECT_TRUE(parse_untrusted_json("{\"a\": ").is_discarded());
  EXPECT_TRUE(parse_untrusted_json("").is_discarded());
}

TEST(UntrustedJson, ACallerMayRefuseMore) {
  using E = nlohmann::json::parse_event_t;
  const auto no_key_x = [](int, E event, nlohmann::json& v) { return event == E::key && v == "x"; };
  EXPECT_TRUE(parse_untrusted_json(R"({"a": {"x": 1}})", no_key_x).is_discarded());
  EXPECT_EQ(parse_untrusted_json(R"({"a": {"y": 1}})", no_key_x)["a"]["y"], 1);
}

}  // namespace
}  // namespace wit
