// Corpora written for the data tests: text files, and numbered documents joined by separator lines.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace wit::testing {

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), std::streamsize(text.size()));
}

inline std::vector<std::string> numbered_documents(size_t n) {
  std::vector<std::string> docs;
  for (size_t i = 0; i < n; ++i)
    docs.push_back("document number " + std::to_string(i) + "\n" + std::string(i % 7, 'x') + "\n");
  return docs;
}

inline std::string join_with_separators(const std::vector<std::string>& docs) {
  std::string text;
  for (size_t i = 0; i < docs.size(); ++i) text += (i ? "<|endoftext|>\n" : "") + docs[i];
  return text;
}

}  // namespace wit::testing
