#include "apps/wit/sample.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>

#include "core/config.h"
#include "core/error.h"
#include "core/fs.h"
#include "trainer/checkpoint.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/manifest.h"
#include "trainer/data/tokenizer.h"
#include "trainer/generate.h"
#include "record/run_config.h"
#include "trainer/safetensors.h"
#include "record/format.h"

namespace wit::cli {

namespace fs = std::filesystem;

namespace {

fs::path checkpoint_of(const fs::path& run, const fs::path& arg) {
  const std::string a = arg.string();
  if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos)
    return run / witness::checkpoint_file_name(std::stoull(a));
  return arg;
}

}  // namespace

int sample(const SampleCliOptions& o) {
  const fs::path cfg_file = o.run / "config.yaml";
  if (!fs::exists(cfg_file)) fail("{} is not a run directory (no config.yaml)", o.run.string());
  const RunConfig rc = run_config_from(config::Config::load(cfg_file, run_schema(), {}));
  model::GPTConfig cfg = rc.model;

  // The tokenizer the run's data was prepared with.
  std::string tokenizer = o.tokenizer;
  if (tokenizer.empty()) {
    const fs::path manifest = rc.data.dir / "manifest.h5";
    if (!fs::exists(manifest))
      fail("the run's dataset {} is not here, so its tokenizer is unknown: pass --tokenizer "
           "byte or gpt2",
           manifest.string());
    const data::Manifest m = data::read_manifest(manifest);
    tokenizer = m.tokenizer;
    if (tokenizer == "external")
      fail("the run's data ({}) was tokenized outside wit (llm.c shards), with a tokenizer wit "
           "does not know: pass --tokenizer gpt2 if it was GPT-2's",
           rc.data.dir.string());
  }
  std::unique_ptr<data::Gpt2Tokenizer> gpt2;
  int vocab = data::kByteVocabSize;
  uint16_t eot = data::kByteEot;
  if (tokenizer == "gpt2") {
    gpt2 = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir(o.vocab));
    vocab = data::kGpt2VocabSize;
    eot = data::kGpt2Eot;
  } else if (tokenizer != "byte") {
    fail("tokenizer '{}' is not one wit samples with (byte, gpt2)", tokenizer);
  }
  if (cfg.vocab_size < vocab)
    fail("the model's vocabulary ({}) is smaller than the {} tokenizer's ({})", cfg.vocab_size,
         tokenizer, vocab);

  SampleOptions so;
  so.tokens = o.tokens;
  so.temperature = o.temperature;
  so.top_k = o.top_k;
  so.seed = o.seed;
  so.stop_token = eot;
  so.vocab = vocab;
  check_sample_options(so, cfg);

  const fs::path source = o.checkpoint.empty() ? o.run / "model.safetensors"
                                               : checkpoint_of(o.run, o.checkpoint);
  if (!fs::exists(source)) fail("{} does not exist", source.string());
  const torch::Tensor params = o.checkpoint.empty() ? import_gpt2_safetensors(source, cfg)
                                                    : load_checkpoint_weights(source).params;
  Sampler sampler(cfg, params);

  std::vector<uint16_t> prompt = gpt2 ? gpt2->encode(o.prompt) : data::encode_bytes(o.prompt);
  if (prompt.empty()) prompt = {eot};  // no prompt: start as a document does
  std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uint16_t> drawn = sampler.generate(prompt, so, [&](uint16_t t) {
    if (t != eot) {
      const std::string bytes = gpt2 ? gpt2->token_bytes(t) : data::decode_bytes(&t, 1);
      std::fwrite(bytes.data(), 1, bytes.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fputc('\n', stdout);
  if (!o.logits.empty()) {
    // For comparing with another implementation (transformers): exact float values as JSON.
    const torch::Tensor l = sampler.next_logits(prompt);
    const float* p = l.data_ptr<float>();
    const nlohmann::json j = {{"prompt", prompt},
                              {"logits", std::vector<float>(p, p + l.numel())},
                              {"drawn", drawn}};
    write_file_atomic(o.logits, j.dump() + "\n");
  }
  if (o.stats)
    fmt::print(stderr, "{} tokens in {:.2f} s ({:.1f} tokens/s; prompt {} tokens){}\n",
               drawn.size(), s, double(drawn.size()) / s, prompt.size(),
               !drawn.empty() && drawn.back() == eot ? "; stopped at end of text" : "");
  return 0;
}

}  // namespace wit::cli
