// JSON from bytes someone else wrote (a trainer's log, a proof, a certificate, a request, a
// corpus line), parsed with a bound on its nesting: parsing is iterative, but copying,
// comparing and printing a value recurse once per level, so [[[[...]]]] a hundred thousand deep
// would overflow the stack of whoever handles it later.
//
//   const auto j = parse_untrusted_json(text);
//   if (j.is_discarded()) fail("{} is not JSON (or nests deeper than {})", where, kMaxJsonDepth);
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace wit {

// Far deeper than any JSON wit reads or writes (the deepest, a certificate, nests 4 levels).
constexpr int kMaxJsonDepth = 64;

// The value, or a discarded one (is_discarded()) when `text` is not JSON or nests more than
// `max_depth` objects and arrays. With `reject`, each (depth, event, value) the parser reports may also refuse the
// text by returning true (e.g. a key set twice).
template <typename Json = nlohmann::json, typename Reject>
Json parse_untrusted_json(std::string_view text, Reject&& reject, int max_depth = kMaxJsonDepth) {
  bool refused = false;
  using Event = typename Json::parse_event_t;
  auto callback = [&](int depth, Event event, Json& value) {
    // The outermost container begins at depth 0: one beginning at max_depth is one too many.
    const bool opens = event == Event::object_start || event == Event::array_start;
    if (refused || (opens && depth >= max_depth) || reject(depth, event, value)) refused = true;
    return !refused;
  };
  Json j = Json::parse(text, callback, /*allow_exceptions=*/false);
  return refused ? Json(Json::value_t::discarded) : j;
}

template <typename Json = nlohmann::json>
Json parse_untrusted_json(std::string_view text, int max_depth = kMaxJsonDepth) {
  return parse_untrusted_json<Json>(
      text, [](int, typename Json::parse_event_t, Json&) { return false; }, max_depth);
}

}  // namespace wit
