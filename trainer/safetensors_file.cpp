// The safetensors container's header (trainer/safetensors_file.h).
#include "trainer/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json.h"

namespace wit {

SafetensorsIndex parse_safetensors_header(const std::string& head, uint64_t file_size,
                                          const std::string& where) {
  uint64_t n = 0;
  if (head.size() < 8 || file_size < 8) fail("{} is not a safetensors file (too short)", where);
  std::memcpy(&n, head.data(), 8);
  if (n > file_size - 8 || n > head.size() - 8 || n > (uint64_t(1) << 30))
    fail("{} is not a safetensors file (bad header length)", where);
  SafetensorsIndex out;
  out.data_offset = 8 + n;
  const uint64_t data_bytes = file_size - out.data_offset;
  try {
    const auto header = parse_untrusted_json<nlohmann::ordered_json>(head.substr(8, n));
    if (header.is_discarded())
      fail("{}: the safetensors header is not JSON (or nests deeper than {} levels)", where,
           kMaxJsonDepth);
    if (!header.is_object()) fail("{}: the safetensors header is not a JSON object", where);
    for (auto& [name, v] : header.items()) {
      if (name == "__metadata__") {
        out.metadata = v.get<std::map<std::string, std::string>>();
        continue;
      }
      if (!v.is_object() || v.at("dtype") != "F32")
        fail("{}: tensor {} is not F32 (only F32 is read)", where, name);
      SafetensorsEntry e;
      e.name = name;
      e.shape = v.at("shape").get<std::vector<int64_t>>();
      const auto offs = v.at("data_offsets").get<std::vector<uint64_t>>();
      // Every product and sum is checked before it can overflow.
      uint64_t numel = 1;
      for (int64_t d : e.shape) {
        if (d < 0 || (d > 0 && numel > data_bytes / 4 / uint64_t(d)))
          fail("{}: tensor {} has a shape larger than the file", where, name);
        numel *= uint64_t(d);
      }
      if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > data_bytes ||
          offs[1] - offs[0] != numel * 4)
        fail("{}: tensor {} has inconsistent offsets or lies past the end of the file", where,
             name);
      e.begin = offs[0];
      e.end = offs[1];
      out.tensors.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: corrupt safetensors header: {}", where, e.what());
  }
  // As the format requires, the tensors tile the data section: no byte read twice (a thousand
  // tensors over the same range would cost a thousand times the file), no hole.
  std::vector<const SafetensorsEntry*> by_place;
  for (const auto& e : out.tensors) by_place.push_back(&e);
  std::sort(by_place.begin(), by_place.end(), [](const auto* a, const auto* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  uint64_t covered = 0;
  for (const auto* e : by_place) {
    if (e->begin != covered)
      fail("{}: tensor {} begins at data byte {}, where the tensors before it end at {}: the "
           "tensors must cover the data section once, without overlap or gap",
           where, e->name, e->begin, covered);
    covered = e->end;
  }
  if (covered != data_bytes)
    fail("{}: the tensors cover {} of the data section's {} bytes", where, covered, data_bytes);
  return out;
}

}  // namespace wit
