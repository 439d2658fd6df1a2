// `wit query`: was a document trained on by a run, and when — with proofs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace wit::cli {

struct QueryOptions {
  std::filesystem::path run;
  std::vector<std::filesystem::path> docs;  // files, each one document
  std::vector<uint64_t> doc_ids;
  std::filesystem::path jsonl;  // one document per line
  std::string text_field = "text";
  std::string split;            // "val": the contamination report over every held-out document
  std::filesystem::path data;   // the run's dataset; default: its config's data.dir
  std::filesystem::path proof;  // write proofs here
  bool json = false;
  std::filesystem::path check_proof;  // verify this proof file instead, against either
  std::string root, genesis, head;    // ... this manifest root, run genesis and signed head, or
  std::filesystem::path certificate;  // ... the run a certificate names,
  std::string verifier_key;           //     signed by this verifier
  std::vector<std::string> accept;    //     weaker certificates accepted (tolerance, seed, ...)
};

int query(const QueryOptions& o);

}  // namespace wit::cli
