// Corpus readers: where documents begin and end in each input format (see corpus.h), and the
// King James Bible read from Debian's `bible` program as the built-in default corpus.
#include "trainer/data/corpus.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/json.h"

namespace wit::data {

namespace {

constexpr std::string_view kSeparatorLine = "<|endoftext|>";

// Splits canonical text at separator lines and hands each piece to `visit`.
void split_text(const std::string& text, const std::string& name, const DocumentVisitor& visit) {
  struct Span {
    size_t begin, end, first_line;
  };
  std::vector<Span> spans;
  size_t begin = 0, begin_line = 1, line = 1, pos = 0;
  std::string_view view(text);
  while (pos < text.size()) {
    size_t newline = text.find('\n', pos);
    size_t end = newline == std::string::npos ? text.size() : newline;
    if (view.substr(pos, end - pos) == kSeparatorLine) {
      spans.push_back({begin, pos, begin_line});
      begin = newline == std::string::npos ? text.size() : newline + 1;
      begin_line = line + 1;
    }
    if (newline == std::string::npos) break;
    pos = newline + 1;
    ++line;
  }
  spans.push_back({begin, text.size(), begin_line});
  for (const Span& s : spans) {
    std::string source = spans.size() == 1 ? name : name + ":" + std::to_string(s.first_line);
    visit(Document{text.substr(s.begin, s.end - s.begin), std::move(source)});
  }
}

bool is_hidden(const fs::path& p) {
  std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// Regular, non-hidden files below `dir`, as relative paths in byte order. A link is taken only
// when it leads to a file inside `dir`: a corpus from elsewhere could hold one to the reader's
// own files (a key, /proc/self/environ), which would end up in the shards.
std::vector<fs::path> list_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) fail("cannot list {}: {}", dir.string(), ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) fail("cannot list {}: {}", dir.string(), ec.message());
    if (is_hidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    if (it->is_symlink() && !path_inside(it->path(), dir)) continue;
    files.push_back(it->path().lexically_relative(dir));
  }
  if (ec) fail("cannot list {}: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return a.generic_string() < b.generic_string();
  });
  return files;
}

bool has_extension(const fs::path& p, const char* ext) { return p.extension() == ext; }

// ---------------------------------------------------------------------------------------------
// King James Bible

struct Book {
  const char* abbreviation;  // as `bible` prints it
  const char* name;
};

constexpr Book kBooks[] = {
    {"Ge", "Genesis"},          {"Exo", "Exodus"},
    {"Lev", "Leviticus"},       {"Num", "Numbers"},
    {"Deu", "Deuteronomy"},     {"Josh", "Joshua"},
    {"Jdgs", "Judges"},         {"Ruth", "Ruth"},
    {"1Sm", "1 Samuel"},        {"2Sm", "2 Samuel"},
    {"1Ki", "1 Kings"},         {"2Ki", "2 Kings"},
    {"1Chr", "1 Chronicles"},   {"2Chr", "2 Chronicles"},
    {"Ezra", "Ezra"},           {"Neh", "Nehemiah"},
    {"Est", "Esther"},          {"Job", "Job"},
    {"Psa", "Psalms"},          {"Prv", "Proverbs"},
    {"Eccl", "Ecclesiastes"},   {"SSol", "Song of Solomon"},
    {"Isa", "Isaiah"},          {"Jer", "Jeremiah"},
    {"Lam", "Lamentations"},    {"Eze", "Ezekiel"},
    {"Dan", "Daniel"},          {"Hos", "Hosea"},
    {"Joel", "Joel"},           {"Amos", "Amos"},
    {"Obad", "Obadiah"},        {"Jonah", "Jonah"},
    {"Mic", "Micah"},           {"Nahum", "Nahum"},
    {"Hab", "Habakkuk"},        {"Zep", "Zephaniah"},
    {"Hag", "Haggai"},          {"Zec", "Zechariah"},
    {"Mal", "Malachi"},         {"Mat", "Matthew"},
    {"Mark", "Mark"},           {"Luke", "Luke"},
    {"John", "John"},           {"Acts", "Acts"},
    {"Rom", "Romans"},          {"1Cor", "1 Corinthians"},
    {"2Cor", "2 Corinthians"},  {"Gal", "Galatians"},
    {"Eph", "Ephesians"},       {"Phi", "Philippians"},
    {"Col", "Colossians"},      {"1Th", "1 Thessalonians"},
    {"2Th", "2 Thessalonians"}, {"1Tim", "1 Timothy"},
    {"2Tim", "2 Timothy"},      {"Titus", "Titus"},
    {"Phmn", "Philemon"},       {"Heb", "Hebrews"},
    {"Jas", "James"},           {"1Pet", "1 Peter"},
    {"2Pet", "2 Peter"},        {"1Jn", "1 John"},
    {"2Jn", "2 John"},          {"3Jn", "3 John"},
    {"Jude", "Jude"},           {"Rev", "Revelation"},
};
constexpr size_t kKjvChapters = 1189;
constexpr const char* kBibleRange = "Gen1:1-Rev22:21";

fs::path find_in_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir =
        dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

std::string run_bible_program() {
  fs::path bible = find_in_path("bible");
  if (bible.empty())
    fail(
        "the built-in corpus (King James Bible) needs the 'bible' program, which is not on "
        "PATH: apt-get install bible-kjv");
  std::string command = "'" + bible.string() + "' -f " + kBibleRange + " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) fail("cannot run {}: {}", command, std::strerror(errno));
  std::string output;
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  int status = ::pclose(pipe);
  if (status != 0)
    fail("`{} -f {}` failed (status {}): {}", bible.string(), kBibleRange, status,
         output.substr(0, output.find('\n')));
  return output;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string canonicalize(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      // A run of CRs that ends a line goes whole, so the result holds no "\r\n" and canonical
      // bytes are canonical again (dropping one CR of "\r\r\n" would leave "\r\n").
      size_t j = i;
      while (j < raw.size() && raw[j] == '\r') ++j;
      if (j < raw.size() && raw[j] == '\n') {
        i = j - 1;
        continue;
      }
    }
    out.push_back(raw[i]);
  }
  return out;
}

void read_text_documents(const fs::path& file, const DocumentVisitor& visit) {
  split_text(canonicalize(read_text_file(file)), file.string(), visit);
}

void read_directory_documents(const fs::path& dir, const DocumentVisitor& visit) {
  for (const fs::path& rel : list_files(dir))
    split_text(canonicalize(read_text_file(dir / rel)), rel.generic_string(), visit);
}

void read_jsonl_documents(const fs::path& file, const std::string& text_field,
                          const DocumentVisitor& visit, bool canonical) {
  require_regular_file(file, "JSONL corpus");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot read {}: {}", file.string(), std::strerror(errno));
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = file.string() + ":" + std::to_string(line_no);
    const nlohmann::json object = parse_untrusted_json(line);
    if (object.is_discarded())
      fail("{}: invalid JSON (or nested deeper than {} levels)", where, kMaxJsonDepth);
    if (!object.is_object())
      fail("{}: expected a JSON object, found {}", where, object.type_name());
    auto field = object.find(text_field);
    if (field == object.end()) {
      std::string fields;
      for (const auto& [key, value] : object.items())
        fields += (fields.empty() ? "'" : ", '") + key + "' (" + value.type_name() + ")";
      fail("{}: the object has no field '{}'; its fields: {}; choose the text's with --text-field",
           where, text_field, fields.empty() ? std::string("none") : fields);
    }
    if (!field->is_string())
      fail("{}: field '{}' is {}, expected a string", where, text_field, field->type_name());
    const std::string& text = field->get_ref<const std::string&>();
    visit(Document{canonical ? canonicalize(text) : text, where});
  }
  if (in.bad()) fail("cannot read {}: read error", file.string());
}

void read_kjv_documents(const DocumentVisitor& visit) {
  std::string output = run_bible_program();
  // Lines look like "1Sm3:4 That the LORD called Samuel: and he answered, Here am I."
  std::string text, source, current_book, current_chapter;
  size_t chapters = 0;
  auto emit = [&] {
    if (!source.empty()) {
      visit(Document{std::move(text), std::move(source)});
      ++chapters;
    }
    text.clear();
    source.clear();
  };
  size_t pos = 0, line_no = 0;
  while (pos < output.size()) {
    size_t newline = output.find('\n', pos);
    std::string line =
        output.substr(pos, newline == std::string::npos ? std::string::npos : newline - pos);
    pos = newline == std::string::npos ? output.size() : newline + 1;
    ++line_no;
    if (line.empty()) continue;
    auto bad = [&] {
      fail("`bible -f {}` output line {} is not a verse ('Book1:1 text'): '{}'", kBibleRange,
           line_no, line.substr(0, 80));
    };
    size_t i = 0;
    if (std::isdigit(static_cast<unsigned char>(line[0]))) ++i;
    while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
    std::string abbreviation = line.substr(0, i);
    size_t colon = line.find(':', i);
    size_t space = line.find(' ', i);
    if (i == 0 || colon == std::string::npos || space == std::string::npos || colon > space) bad();
    std::string chapter = line.substr(i, colon - i),
                verse = line.substr(colon + 1, space - colon - 1);
    auto all_digits = [](const std::string& s) {
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!all_digits(chapter) || !all_digits(verse)) bad();
    const Book* book = nullptr;
    for (const Book& b : kBooks)
      if (abbreviation == b.abbreviation) book = &b;
    if (!book)
      fail("`bible -f {}` output line {}: unknown book abbreviation '{}'", kBibleRange, line_no,
           abbreviation);
    if (book->name != current_book || chapter != current_chapter) {
      emit();
      current_book = book->name;
      current_chapter = chapter;
      source = current_book + " " + chapter;
      text = source + "\n";
    }
    text += verse + " " + canonicalize(line.substr(space + 1)) + "\n";
  }
  emit();
  if (chapters != kKjvChapters)
    fail("`bible -f {}` printed {} chapters, expected {}: is bible-kjv-text installed completely?",
         kBibleRange, chapters, kKjvChapters);
}

// ---------------------------------------------------------------------------------------------

std::string resolve_format(const fs::path& input, const std::string& format) {
  static const char* kFormats[] = {"auto", "text", "dir", "jsonl", "kjv", "llmc"};
  if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats))
    fail("unknown corpus format '{}' (expected auto, text, dir, jsonl, kjv or llmc)", format);
  if (input.empty()) {
    if (format == "auto" || format == "kjv") return "kjv";
    fail("corpus format '{}' needs an input path", format);
  }
  if (format == "kjv")
    fail("corpus format 'kjv' is the built-in King James Bible and takes no input (got {})",
         input.string());
  std::error_code ec;
  if (!fs::exists(input, ec)) fail("input {} does not exist", input.string());
  bool is_dir = fs::is_directory(input, ec);
  if (format == "auto") {
    if (is_dir) {
      // llm.c shards are read from the top level only (prepare.h), so look only there.
      bool any = false, all_bin_files = true;
      fs::directory_iterator it(input, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        if (is_hidden(it->path())) continue;
        any = true;
        all_bin_files &= it->is_regular_file() && has_extension(it->path(), ".bin");
      }
      if (ec) fail("cannot list {}: {}", input.string(), ec.message());
      return any && all_bin_files ? "llmc" : "dir";
    }
    if (has_extension(input, ".jsonl")) return "jsonl";
    if (has_extension(input, ".bin")) return "llmc";
    return "text";
  }
  if (format == "dir" && !is_dir)
    fail("corpus format 'dir' needs a directory, but {} is a file", input.string());
  if ((format == "text" || format == "jsonl") && is_dir)
    fail("corpus format '{}' needs a file, but {} is a directory", format, input.string());
  return format;
}

void read_documents(const fs::path& input, const std::string& format, const std::string& text_field,
                    const DocumentVisitor& visit) {
  if (format == "text") return read_text_documents(input, visit);
  if (format == "dir") return read_directory_documents(input, visit);
  if (format == "jsonl") return read_jsonl_documents(input, text_field, visit);
  if (format == "kjv") return read_kjv_documents(visit);
  fail("corpus format '{}' has no document reader (llmc shards are read by prepare directly)",
       format);
}

std::vector<Document> collect_documents(const fs::path& input, const std::string& format,
                                        const std::string& text_field) {
  std::vector<Document> docs;
  read_documents(input, resolve_format(input, format), text_field,
                 [&](Document&& d) { docs.push_back(std::move(d)); });
  return docs;
}

}  // namespace wit::data
