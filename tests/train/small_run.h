// What the training tests share: the built-in corpus, prepared once per test process, and a
// small run over it.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "trainer/data/prepare.h"

namespace wit::test {

// The built-in corpus, prepared once per test process into a directory of its own (mkdtemp:
// a directory left by an earlier process with the same pid must not be taken for it), and
// removed when the process exits.
inline const std::filesystem::path& kjv_dir() {
  struct PreparedCorpus {
    std::filesystem::path dir;
    PreparedCorpus() {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "wit-test-kjv-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
      dir = pattern;
      data::PrepareOptions o;
      o.out = dir / "corpus";
      data::prepare(o);
    }
    ~PreparedCorpus() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const PreparedCorpus corpus;
  static const std::filesystem::path dir = corpus.dir / "corpus";
  return dir;
}

// A small model that still exercises every piece: dropout, two micro-batches, clipping.
inline std::vector<std::string> small_run(int64_t steps) {
  return {"model.n_layer=2",          "model.n_head=2",
          "model.n_embd=64",          "model.context=64",
          "model.dropout=0.1",        "data.dir=" + kjv_dir().string(),
          "data.seq_len=32",          "train.steps=" + std::to_string(steps),
          "train.micro_batches=2",    "train.micro_batch_size=4",
          "train.threads=1",          "train.log_every=1",
          "train.eval_every=5",       "train.eval_batches=2",
          "train.checkpoint_every=5", "optim.lr=3e-3",
          "optim.warmup_steps=2"};
}

}  // namespace wit::test
