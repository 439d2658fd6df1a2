#include "trainer/data/choice_set.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/json.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizer.h"

namespace wit::data {

namespace {

using Encode = std::function<std::vector<uint16_t>(std::string_view)>;

constexpr size_t kMaxEndings = 16;

// The dataset's tokenizer as a function; data tokenized outside wit has none wit knows.
Encode encoder_for(const Manifest& m, std::unique_ptr<Gpt2Tokenizer>& gpt2) {
  if (m.tokenizer == "byte") return [](std::string_view s) { return encode_bytes(s); };
  if (m.tokenizer == "gpt2") {
    gpt2 = Gpt2Tokenizer::load(gpt2_vocab_dir({}));
    if (gpt2->vocab_digest() != m.tokenizer_vocab)
      fail("the GPT-2 vocabulary in {} is not the one the dataset was tokenized with (vocabulary "
           "{}, the dataset records {})",
           gpt2_vocab_dir({}).string(), to_hex(gpt2->vocab_digest()).substr(0, 16),
           to_hex(m.tokenizer_vocab).substr(0, 16));
    const Gpt2Tokenizer* t = gpt2.get();
    return [t](std::string_view s) { return t->encode(s); };
  }
  fail("a multiple-choice evaluation needs the dataset's tokenizer, but this dataset was "
       "tokenized outside wit (tokenizer '{}')",
       m.tokenizer);
}

ChoiceExample parse_example(const nlohmann::json& j, const Encode& encode, int64_t context,
                            const std::string& where) {
  if (!j.is_object()) fail("{}: not a JSON object", where);
  auto field = [&](const char* name) -> const nlohmann::json& {
    auto it = j.find(name);
    if (it == j.end()) {
      std::string keys;
      for (auto& [k, v] : j.items()) keys += (keys.empty() ? "" : ", ") + k;
      fail("{}: no field '{}' (the line has: {}); HellaSwag's format gives ctx, endings and label",
           where, name, keys.empty() ? "nothing" : keys);
    }
    return *it;
  };
  const auto& ctx = field("ctx");
  const auto& endings = field("endings");
  const auto& label = field("label");
  if (!ctx.is_string() || ctx.get_ref<const std::string&>().empty())
    fail("{}: ctx must be a non-empty string", where);
  if (!endings.is_array() || endings.size() < 2 || endings.size() > kMaxEndings)
    fail("{}: endings must be an array of 2 to {} strings", where, kMaxEndings);
  // HellaSwag writes the label as a number; some copies write it as a string of digits.
  int64_t l = -1;
  if (label.is_number_integer()) {
    l = label.get<int64_t>();
  } else if (label.is_string()) {
    const std::string& s = label.get_ref<const std::string&>();
    if (!s.empty() && s.size() < 4 && s.find_first_not_of("0123456789") == std::string::npos)
      l = std::stoll(s);
  }
  if (l < 0 || l >= int64_t(endings.size()))
    fail("{}: label must be the index of one of the {} endings, not {}", where, endings.size(),
         label.dump());

  ChoiceExample e;
  e.label = l;
  e.context = encode(ctx.get_ref<const std::string&>());
  size_t longest = 0;
  for (size_t k = 0; k < endings.size(); ++k) {
    if (!endings[k].is_string() || endings[k].get_ref<const std::string&>().empty())
      fail("{}: ending {} must be a non-empty string", where, k);
    e.endings.push_back(encode(" " + endings[k].get<std::string>()));
    longest = std::max(longest, e.endings.back().size());
  }
  // The model reads at most `context` tokens: the context and the ending but the ending's last.
  if (int64_t(longest) > context)
    fail("{}: an ending of {} tokens leaves no room for the context in model.context = {}", where,
         longest, context);
  const size_t room = size_t(context) + 1 - longest;
  if (e.context.size() > room) e.context.erase(e.context.begin(), e.context.end() - long(room));
  return e;
}

}  // namespace

ChoiceSet load_choice_set(const std::filesystem::path& file, const Manifest& manifest,
                          int64_t context, const std::string& sha256_hex) {
  if (!std::filesystem::is_regular_file(file))
    fail("{} is not a file (train.choice_eval names a HellaSwag-format .jsonl file)",
         file.string());
  if (const uint64_t size = std::filesystem::file_size(file); size > kMaxChoiceFileBytes)
    fail("{} is {} bytes: a multiple-choice file over {} bytes is refused", file.string(), size,
         kMaxChoiceFileBytes);
  const std::string text = read_text_file(file);
  ChoiceSet set;
  set.sha256 = sha256(text);
  if (!sha256_hex.empty() && to_hex(set.sha256) != sha256_hex)
    fail("{} has SHA-256 {}, not the committed {}", file.string(), to_hex(set.sha256),
         sha256_hex);
  std::unique_ptr<Gpt2Tokenizer> gpt2;
  const Encode encode = encoder_for(manifest, gpt2);
  size_t line_no = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    ++line_no;
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}:{}", file.string(), line_no);
    const nlohmann::json j = parse_untrusted_json(line);
    if (j.is_discarded()) fail("{}: not JSON (or nested deeper than {} levels)", where, kMaxJsonDepth);
    set.examples.push_back(parse_example(j, encode, context, where));
  }
  if (set.examples.empty()) fail("{} holds no examples", file.string());
  return set;
}

}  // namespace wit::data
