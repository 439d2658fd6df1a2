// How long `wit verify`'s check of the document records takes (Dataset::verify_documents, in
// the structure stage), per tokenizer, on the built-in corpus prepared three ways: byte, gpt2
// (wit prepare's), and the gpt2 shards adopted as llm.c shards (tokenizer external, whose check
// also re-encodes every document's text with GPT-2 to compare with its tokens). For each: the
// median of --rounds whole checks on one thread, and one part of two (what each of a verifier's
// two processes does under mpirun -np 2).
//
//   build/benchmarks/wit_bench_documents [--rounds 5]
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "benchmarks/bench_timing.h"
#include "trainer/data/dataset.h"
#include "trainer/data/prepare.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using wit::bench::median;
using wit::bench::secs_since;

double time_check(const wit::data::Dataset& data, int part, int parts, int rounds) {
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    data.verify_documents({}, part, parts);
    t.push_back(secs_since(start));
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      fmt::print(stderr, "usage: wit_bench_documents [--rounds N]   (N >= 1, default 5)\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  if (rounds < 1) {
    fmt::print(stderr, "--rounds must be at least 1\n");
    return 2;
  }
  try {
    const fs::path work = fs::temp_directory_path() / fmt::format("wit-bench-docs-{}", ::getpid());
    wit::data::PrepareOptions o;
    o.force = true;
    o.out = work / "byte";
    wit::data::prepare(o);
    o.tokenizer = "gpt2";
    o.out = work / "gpt2";
    wit::data::prepare(o);
    o.input = work / "gpt2" / "train_000000.bin";
    o.format = "llmc";
    o.tokenizer = "byte";  // the default: llm.c shards are tokenized already
    o.out = work / "external";
    wit::data::prepare(o);

    fmt::print("{:<9} {:>10} {:>10} {:>12} {:>14} {:>16}\n", "tokenizer", "documents", "tokens",
               "whole (s)", "M tokens/s", "part 1 of 2 (s)");
    for (const char* kind : {"byte", "gpt2", "external"}) {
      const wit::data::Dataset data = wit::data::Dataset::open(work / kind);
      const uint64_t tokens = data.train().size() + data.val().size();
      const double whole = time_check(data, 0, 1, rounds);
      const double half = time_check(data, 0, 2, rounds);
      fmt::print("{:<9} {:>10} {:>10} {:>12.3f} {:>14.2f} {:>16.3f}\n", kind,
                 data.manifest().documents.size(), tokens, whole, double(tokens) / whole / 1e6,
                 half);
    }
    fs::remove_all(work);
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_bench_documents: {}\n", e.what());
    return 1;
  }
  return 0;
}
