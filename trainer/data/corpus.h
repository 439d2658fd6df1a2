// Reading raw documents for `wit prepare`: text files, directories, JSONL, and the built-in
// King James Bible. Readers stream documents to a visitor, so a corpus never sits in memory.
//
// Canonical bytes (protocol: a document's SHA-256 in the manifest is over exactly these):
//   the document's bytes as read, with every line ending "\r\n" (or "\r...\r\n") turned into
//   "\n"; nothing else changes (no Unicode normalisation, no trimming; any bytes are allowed).
//   Canonical bytes hold no "\r\n", so canonicalizing them again changes nothing. Readers hand over documents
//   already canonical, empty ones included; `prepare` skips and counts those.
// Where the document boundaries are:
//   text file  documents are separated by lines that are exactly "<|endoftext|>" (after CRLF
//              canonicalisation); a separator line and its newline belong to no document; a
//              file without separators is one document.
//   directory  every regular file below it, recursively, in byte order of relative path,
//              skipping names that start with '.', each read as a text file.
//   JSONL      one JSON object per non-blank line; the document is its string field `text_field`.
//   KJV        one document per chapter (1189): "<Book> <chapter>\n" then "<verse> <text>\n" per
//              verse, from `bible -f Gen1:1-Rev22:21` (Debian package bible-kjv).
//
//   read_jsonl_documents("data.jsonl", "text", [&](Document&& d) { use(d.text); });
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace wit::data {

namespace fs = std::filesystem;

struct Document {
  std::string text;    // canonical bytes
  std::string source;  // for messages: "file.txt", "file.txt:12" (first line), "Genesis 1", ...
};

using DocumentVisitor = std::function<void(Document&&)>;

// "\r\n" and "\r...\r\n" -> "\n".
std::string canonicalize(std::string_view raw);

void read_text_documents(const fs::path& file, const DocumentVisitor& visit);
void read_directory_documents(const fs::path& dir, const DocumentVisitor& visit);
// `canonical` false hands over each text as it is in the file (a query of llm.c-tokenized data,
// whose documents were tokenized from their raw text).
void read_jsonl_documents(const fs::path& file, const std::string& text_field,
                          const DocumentVisitor& visit, bool canonical = true);
void read_kjv_documents(const DocumentVisitor& visit);

// "auto" resolved from the input: empty -> kjv; a directory holding only .bin files -> llmc;
// other directory -> dir; *.jsonl -> jsonl; *.bin -> llmc; other file -> text. Explicit formats
// are checked and returned as they are. Throws wit::Error for a missing input or unknown format.
std::string resolve_format(const fs::path& input, const std::string& format);

// Dispatches to the reader for a resolved text format (text|dir|jsonl|kjv).
void read_documents(const fs::path& input, const std::string& format, const std::string& text_field,
                    const DocumentVisitor& visit);

// Convenience for small corpora and tests: every document in memory.
std::vector<Document> collect_documents(const fs::path& input, const std::string& format,
                                        const std::string& text_field);

}  // namespace wit::data
