#include "apps/wit/commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "apps/wit/inspect.h"
#include "apps/wit/query.h"
#include "apps/wit/sample.h"
#include "apps/wit/tokenize.h"
#include "apps/wit/verify.h"
#include "core/error.h"
#include "core/sha256.h"
#include "trainer/data/prepare.h"
#include "record/run_config.h"
#include "trainer/train_loop.h"
#include "record/signing.h"

namespace wit::cli {

void Commands::on_run(const CLI::App* sub, std::function<int()> action) {
  actions_[sub] = std::move(action);
}

int Commands::run_selected(const CLI::App& app) const {
  const std::function<int()>* action = nullptr;
  for (const CLI::App* a = &app; !a->get_subcommands().empty();) {
    a = a->get_subcommands().front();
    if (auto it = actions_.find(a); it != actions_.end()) action = &it->second;
  }
  return action ? (*action)() : 2;
}

#ifndef WIT_HAVE_BOARD
void add_board(CLI::App& app, Commands& commands) {
  auto* board = app.add_subcommand(
      "board", "The leaderboard (docs/board.md): not in this build, which was configured without "
               "SQLite, libpq or Boost");
  board->allow_extras();
  commands.on_run(board, [] {
    fail("wit board: this wit was built without the leaderboard (its configure found no SQLite, "
         "libpq or Boost, as in an offline build); use a wit built with launch/build");
    return 1;
  });
}
#endif

void add_prepare(CLI::App& app, Commands& commands) {
  auto o = std::make_shared<data::PrepareOptions>();
  auto* sub = app.add_subcommand(
      "prepare",
      "Tokenize a corpus into llm.c-format shards (train and val) with a manifest of every "
      "document's SHA-256 and a Merkle root over them.");
  sub->add_option("input", o->input,
                  "A text file (documents separated by lines '<|endoftext|>'), a directory of "
                  "text files, a .jsonl file, or llm.c .bin shards. Omitted: the built-in King "
                  "James Bible (Debian package bible-kjv), one document per chapter.");
  sub->add_option("--out,-o", o->out, "Output directory")->required();
  sub->add_option("--format", o->format, "Input format")
      ->check(CLI::IsMember({"auto", "text", "dir", "jsonl", "kjv", "llmc"}))
      ->capture_default_str();
  sub->add_option("--text-field", o->text_field, "JSONL field holding the text")
      ->capture_default_str();
  sub->add_option("--val-fraction", o->val_fraction, "Fraction of documents held out")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of the held-out split")->capture_default_str();
  sub->add_option("--shard-tokens", o->shard_tokens, "Maximum tokens per shard")
      ->check(CLI::Range(uint64_t(1024), uint64_t(1) << 40))
      ->capture_default_str();
  sub->add_flag("--force", o->force, "Replace an existing prepared dataset in --out");
  sub->add_option("--tokenizer", o->tokenizer,
                  "Tokenizer of text inputs: byte (one token per byte, vocabulary 257) or gpt2 "
                  "(GPT-2's byte-level BPE, vocabulary 50,257, the same ids as tiktoken's gpt2; "
                  "recorded in the manifest with its vocabulary files' digest)")
      ->check(CLI::IsMember({"byte", "gpt2"}))
      ->capture_default_str();
  sub->add_option("--vocab", o->vocab,
                  "Directory holding GPT-2's gpt2.tiktoken (default: $WIT_GPT2_VOCAB, "
                  "else where launch/install-deps put them)")
      ->type_name("DIR");
  commands.on_run(sub, [o] {
    auto r = data::prepare(*o, [](const std::string& msg) {
      fmt::print("{}\n", msg);
      std::fflush(stdout);
    });
    fmt::print(
        "prepared {}: {} documents ({} train, {} val, {} empty skipped), {} train tokens, "
        "{} val tokens in {} shards\nmanifest root {}\n",
        o->out.string(), r.documents, r.train_documents, r.val_documents, r.skipped_empty,
        r.train_tokens, r.val_tokens, r.shards.size(), to_hex(r.root));
    return 0;
  });
}

void add_tokenize(CLI::App& app, Commands& commands) {
  auto o = std::make_shared<TokenizeOptions>();
  auto* sub = app.add_subcommand(
      "tokenize",
      "Encode text into token ids (printed space-separated), decode ids back into text, or "
      "list a corpus's documents with their tokens as `wit prepare` makes them.");
  sub->add_option("input", o->input,
                  "A file (omitted or -: standard input); with --documents, a corpus as `wit "
                  "prepare` takes it (omitted: the built-in King James Bible)");
  sub->add_option("--tokenizer", o->tokenizer, "byte (the default, as for wit prepare) or gpt2")
      ->check(CLI::IsMember({"byte", "gpt2"}))
      ->capture_default_str();
  sub->add_option("--vocab", o->vocab, "Directory holding GPT-2's gpt2.tiktoken")
      ->type_name("DIR");
  sub->add_flag("--decode", o->decode, "Read whitespace-separated ids, write their bytes");
  sub->add_flag("--documents", o->documents,
                "One JSON line per document: source, text (text_hex when not UTF-8) and tokens "
                "(without the end-of-text token prepare puts before each)");
  sub->add_option("--format", o->format, "With --documents: the corpus format, as for prepare")
      ->check(CLI::IsMember({"auto", "text", "dir", "jsonl", "kjv"}))
      ->capture_default_str();
  sub->add_option("--text-field", o->text_field, "With --documents: the JSONL field of the text")
      ->capture_default_str();
  sub->add_flag("--stats", o->stats, "Print bytes, tokens and encoding speed (MB/s) on stderr");
  commands.on_run(sub, [o] { return tokenize(*o); });
}

void add_sample(CLI::App& app, Commands& commands) {
  auto o = std::make_shared<SampleCliOptions>();
  auto* sub = app.add_subcommand(
      "sample",
      "Generate text from a run's model (model.safetensors, or a checkpoint), decoded with the "
      "tokenizer the run's data was prepared with. Stops at the end-of-text token.");
  sub->add_option("run", o->run, "The run directory")->required();
  sub->add_option("--prompt,-p", o->prompt, "Text to continue (default: none; starts a document)");
  sub->add_option("--tokens,-n", o->tokens, "New tokens at most")->capture_default_str();
  sub->add_option("--temperature,-t", o->temperature,
                  "Divides the logits; 0 is greedy (always the most likely token)")
      ->capture_default_str();
  sub->add_option("--top-k,-k", o->top_k, "Draw from the k most likely tokens (0: all)")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of the draws: the same seed, the same text")
      ->capture_default_str();
  sub->add_option("--logits", o->logits,
                  "Also write to this file, as JSON: the prompt's token ids, the logits for the "
                  "token after it, and the ids drawn (to compare with another implementation)");
  sub->add_option("--checkpoint", o->checkpoint,
                  "Sample from a checkpoint instead of model.safetensors: a step number or a file")
      ->type_name("STEP|FILE");
  sub->add_option("--tokenizer", o->tokenizer,
                  "byte or gpt2 (default: what the run's dataset manifest records)")
      ->check(CLI::IsMember({"byte", "gpt2"}));
  sub->add_option("--vocab", o->vocab, "Directory holding GPT-2's gpt2.tiktoken")
      ->type_name("DIR");
  sub->add_flag("--stats", o->stats, "Print tokens per second on stderr");
  commands.on_run(sub, [o] { return sample(*o); });
}

void add_train(CLI::App& app, Commands& commands) {
  auto o = std::make_shared<TrainOptions>();
  auto* sub = app.add_subcommand(
      "train",
      "Train a GPT from a YAML config. The run directory receives config.yaml (resolved), "
      "metrics.jsonl, checkpoints/ and, at the end, model.safetensors (Hugging Face GPT-2 "
      "names).");
  sub->add_option("config", o->config, "YAML config, e.g. configs/tiny.yaml");
  sub->add_option("--out,-o", o->run_dir, "Run directory (default runs/<config name>)");
  sub->add_option("--set", o->overrides,
                  "Override a config key: --set section.key=value (repeatable)");
  sub->add_option("--resume", o->run_dir,
                  "Continue the run in this directory from its latest checkpoint, bit for bit");
  sub->add_option("--until", o->until,
                  "Stop after this many steps with a checkpoint, as if interrupted");
  sub->add_option("--key", o->key,
                  "Private key that signs the run's witness log (default: $WIT_SIGNING_KEY, else "
                  "~/.config/wit/signing-key.pem, created on first use; see `wit keygen`)");
  sub->add_flag("--sync-checkpoints", o->sync_checkpoints,
                "Write each checkpoint before the next step. By default the state is copied "
                "between steps (a second copy on rank 0's host while it writes) and written in "
                "the background; the log records it once it is on disk (fsdp always writes in "
                "the loop)");
  sub->add_flag("--quiet,-q", o->quiet, "No progress lines");
  sub->footer("Config keys (YAML sections; all have defaults):\n" + run_schema().describe());
  commands.on_run(sub, [o, sub] {
    o->resume = sub->count("--resume") > 0;
    if (o->resume && !o->config.empty())
      throw CLI::ValidationError("--resume", "takes the run directory; do not also give a config");
    if (!o->resume && o->config.empty()) throw CLI::RequiredError("config (or --resume RUN)");
    auto s = train(*o);
    if (!s.is_root) return 0;  // one summary per job
    fmt::print("run {}: {} steps, last loss {:.4f}, val loss {:.4f}\n  checkpoint {}\n",
               s.run_dir.string(), s.steps_done, s.last_loss, s.val_loss, s.checkpoint.string());
    if (!s.model_file.empty()) fmt::print("  model      {}\n", s.model_file.string());
    fmt::print("  witness    {}\n", s.witness_log.string());
    return 0;
  });
}

void add_config(CLI::App& app, Commands& commands) {
  auto file = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("config",
                                 "Print a config fully resolved (every key, defaults filled in), "
                                 "or every key with its meaning when no file is given.");
  sub->add_option("config", *file, "YAML config");
  sub->add_option("--set", *sets, "Override a key: --set section.key=value");
  commands.on_run(sub, [file, sets] {
    if (file->empty()) {
      fmt::print("{}", run_schema().describe());
      return 0;
    }
    auto c = config::Config::load(*file, run_schema(), *sets);
    run_config_from(c);  // relations between keys
    fmt::print("{}", c.to_yaml());
    return 0;
  });
}

void add_keygen(CLI::App& app, Commands& commands) {
  auto out = std::make_shared<std::string>();
  auto* sub = app.add_subcommand(
      "keygen",
      "Create an Ed25519 signing key pair. The private key signs the witness logs of runs "
      "trained on this machine (`wit train --key FILE`; default $WIT_SIGNING_KEY, else "
      "~/.config/wit/signing-key.pem). Publish the public key or its key id so that verifiers "
      "can require logs signed by it.");
  sub->add_option("--out,-o", *out,
                  "Private key file, written as PKCS#8 PEM with mode 0600; the public key goes "
                  "beside it with .pub appended (default $WIT_SIGNING_KEY, else "
                  "~/.config/wit/signing-key.pem)")
      ->type_name("FILE");
  sub->footer(
      "Keep the private key secret; anyone holding it can sign logs in your name. An existing "
      "key is never overwritten: the default one is shown as it is, an existing --out is "
      "refused.");
  commands.on_run(sub, [out] {
    // Resolved here, not as the option's default, so `--help` works without HOME.
    std::filesystem::path priv =
        out->empty() ? witness::default_key_path() : std::filesystem::path(*out);
    std::filesystem::path pub = priv;
    pub += ".pub";
    // The default key made already (by an earlier keygen, or by `wit train` on first use):
    // nothing to do, and nothing overwritten.
    if (out->empty() && std::filesystem::is_regular_file(priv) && std::filesystem::is_regular_file(pub)) {
      const auto key = witness::SigningKey::load(priv);
      fmt::print("your signing key exists already, kept as it is:\nprivate key  {}\npublic key   {}\nkey id       {}\n",
                 priv.string(), pub.string(), witness::key_id(key.public_key()));
      return 0;
    }
    // Check both names first, so a refusal leaves no half of a new pair behind.
    for (const auto& p : {priv, pub}) {
      std::error_code ec;
      if (std::filesystem::exists(std::filesystem::symlink_status(p, ec)))
        fail("{} already exists; remove it first or choose another path (--out)", p.string());
    }
    auto key = witness::SigningKey::generate();
    key.save(priv);
    try {
      key.save_public(pub);
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove(priv, ec);  // never used: a private key without its .pub is clutter
      throw;
    }
    const auto& pk = key.public_key();
    fmt::print(
        "private key  {}  (keep it secret)\npublic key   {}\npublic hex   {}\nkey id       {}\n",
        priv.string(), pub.string(), to_hex(pk.data(), pk.size()), witness::key_id(pk));
    return 0;
  });
}

void add_inspect(CLI::App& app, Commands& commands) {
  auto o = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand(
      "inspect",
      "Summarise a run's witness log and check it: steps, tokens, last loss, checkpoints, the "
      "hash chain and the signatures. Works while the run trains (the log is live) and after a "
      "crash (the log is valid up to its last complete record). Exit code 1 when the log fails "
      "a check; every problem names its table, row and field.");
  sub->add_option("run", o->run, "Run directory (or its witness.h5)")->required();
  sub->add_flag("--json", o->json, "Print the summary as JSON, for programs");
  sub->add_option("--plot", o->plot, "Also draw the training and validation loss into FILE.png")
      ->type_name("FILE.png");
  sub->add_option("--key", o->trusted_key,
                  "Require every signature to be by this public key (64 hex digits or a PEM "
                  "file such as signing-key.pem.pub)");
  commands.on_run(sub, [o] { return inspect(*o); });
}

void add_query(CLI::App& app, Commands& commands) {
  auto o = std::make_shared<QueryOptions>();
  auto* sub = app.add_subcommand(
      "query",
      "Was a document trained on by a run, and when? Answered exactly from the run's committed "
      "dataset and data order: included (at which steps, micro-batches and rows), held out, in "
      "the dataset but not reached before the run's end, or not in the dataset. Documents are "
      "matched by the SHA-256 of their canonical bytes (\\r\\n read as \\n), as `wit prepare` "
      "hashed them. --proof writes proofs that `wit query --check-proof` verifies alone, given "
      "the run's manifest root, genesis and signed head (or a verifier's certificate).");
  sub->add_option("run", o->run, "Run directory");
  sub->add_option("--doc", o->docs, "A file holding one document (repeatable)")->type_name("FILE");
  sub->add_option("--doc-id", o->doc_ids, "A document id of the run's manifest (repeatable)")
      ->type_name("ID");
  sub->add_option("--jsonl", o->jsonl, "One document per line, streamed")->type_name("FILE");
  sub->add_option("--text-field", o->text_field, "JSONL field holding the text (default text)");
  sub->add_option("--split", o->split,
                  "val: the contamination report, every held-out document proven excluded "
                  "(exit 1 if any was trained on)");
  sub->add_option("--data", o->data,
                  "The run's dataset (default: where the log says the trainer had it)")
      ->type_name("DIR");
  sub->add_option("--proof", o->proof, "Write the answers' proofs to this JSON file")
      ->type_name("OUT.json");
  sub->add_flag("--json", o->json, "One JSON object per answer, for programs");
  sub->add_option("--check-proof", o->check_proof,
                  "Verify a proof file (no run or dataset needed) against a run you trust: "
                  "--root, --genesis and --head, or --certificate with --verifier-key")
      ->type_name("FILE");
  sub->add_option("--root", o->root, "Manifest root (64 hex digits) the proof must be for");
  sub->add_option("--genesis", o->genesis, "Run genesis (64 hex digits) the proof must be for");
  sub->add_option("--head", o->head,
                  "The run's signed head hash (64 hex digits: its announcement, or `wit inspect "
                  "RUN --json`'s signed_head.hash) the proof must end at; a proof made before the "
                  "run went on (a resume) names an earlier head and is refused");
  sub->add_option("--certificate", o->certificate,
                  "A verifier's certificate naming the run (root, genesis, signed head)")
      ->type_name("FILE");
  sub->add_option("--verifier-key", o->verifier_key,
                  "With --certificate: the verifier's public key that must have signed it")
      ->type_name("KEY");
  sub->add_option("--accept", o->accept,
                  "With --certificate: also accept a certificate weaker than a certification "
                  "from fresh randomness (else exit 4): tolerance, seed or fiat-shamir "
                  "(repeatable)")
      ->type_name("KIND");
  commands.on_run(sub, [o] { return query(*o); });
}

void add_verify(CLI::App& app, Commands& commands) {
  auto o = std::make_shared<VerifyCliOptions>();
  auto* sub = app.add_subcommand(
      "verify",
      "Certify a run without trusting its trainer: check the witness log (chains, signatures, "
      "schedules, dataset, every checkpoint file present, sampled against its committed hash), "
      "recompute every step's batch hash and "
      "hyperparameters, replay the first and the last segment and c randomly drawn ones with "
      "the trainer's own step and require every recorded bit to match, check the published "
      "model and the final evaluation. Writes RUN/certificate.json, signed with the verifier's "
      "key, when the run is certified. Exit codes: 0 certified, 1 rejected (or an error, or an "
      "invalid or withdrawn certificate), 2 a command line it cannot take, 3 not reproducible "
      "(the run declares a setting no replay can repeat), 4 consistent within --tolerance (not "
      "a certification) or a certificate weaker than fresh randomness. Under `mpirun -np N` the replay runs on N processes "
      "(N a power of two dividing train.micro_batches), whatever world size trained the run.");
  sub->add_option("run", o->run, "Run directory");
  sub->add_option("--data", o->data,
                  "The run's dataset (default: where the log says the trainer had it; either way "
                  "it must have the committed root and layout)")
      ->type_name("DIR");
  sub->add_option("--init-from", o->init_from,
                  "For a run that started from given weights (model.init_sha256): that "
                  "model.safetensors or its directory (default: the run's config.yaml's "
                  "model.init_from; either way it must hash to the committed SHA-256)")
      ->type_name("PATH");
  sub->add_option("--choice-eval", o->choice_eval,
                  "For a run that scores a multiple-choice evaluation (train.choice_eval_sha256): "
                  "that HellaSwag-format file (default: the run's config.yaml's "
                  "train.choice_eval; either way it must hash to the committed SHA-256)")
      ->type_name("FILE");
  sub->add_option("--challenges,-c", o->challenges,
                  "Segments to draw besides the first and the last (default: enough for --target "
                  "at --confidence)");
  sub->add_option("--segment", o->segment,
                  "Steps per segment: the run is cut into aligned blocks of K steps, K a "
                  "multiple of train.checkpoint_every so that every segment starts and ends at a "
                  "checkpoint (default: train.checkpoint_every)")
      ->type_name("K");
  sub->add_option("--target", o->target,
                  "Fraction of unfaithful steps the challenges must catch (default 0.1)");
  sub->add_option("--confidence", o->confidence,
                  "... with this probability (default 0.9): c = log(1-p)/log(1-f)");
  auto* seed = sub->add_option("--seed", o->seed,
                               "Draw the challenges from this seed (a non-negative integer), for "
                               "an audit others can repeat (default: the verifier's own random "
                               "source, read after the run is received)")
                   ->type_name("N");
  auto* fs_flag =
      sub->add_flag("--fiat-shamir", o->fiat_shamir,
                    "Draw the challenges from the SHA-256 of the log's signed head, so anyone can "
                    "recompute them without trusting the verifier. The trainer can recompute "
                    "them too, and retry: the certificate's bound holds only against a trainer "
                    "who tries fewer than 2^--grinding-bits logs")
          ->excludes(seed);
  sub->add_option("--grinding-bits", o->grinding_bits,
                  "With --fiat-shamir: the trainer is assumed to try up to 2^BITS logs "
                  "(default 40); the stated bound is 1 - 2^BITS (1 - f)^c, or none")
      ->needs(fs_flag)
      ->check(CLI::Range(0, 128))
      ->type_name("BITS");
  sub->add_option("--trainer-key", o->trainer_key,
                  "Require the log to be signed by this public key (hex or PEM file)");
  sub->add_option("--key", o->key,
                  "The verifier's private key, which signs the certificate (default: "
                  "$WIT_SIGNING_KEY, else ~/.config/wit/signing-key.pem)");
  sub->add_option("--tolerance", o->tolerance,
                  "Replay on other hardware: accept losses, gradient norms, probe outputs and "
                  "evaluations within this relative distance, and checkpointed weights within "
                  "it in relative L2 distance; reports the distances seen and never certifies "
                  "(\"consistent within tolerance\")")
      ->type_name("REL");
  sub->add_option("--mode", o->mode,
                  "Layout of the replay on several processes: ddp (full state on each) or fsdp "
                  "(sharded; for models one process cannot hold)")
      ->check(CLI::IsMember({"ddp", "fsdp"}));
  sub->add_option("--checkpoint-leaves", o->checkpoint_leaves,
                  "Of each checkpoint, hash this many leaves (4 KiB to 1 MiB, by model size), "
                  "drawn like the challenges, against its leaf table, itself checked against the committed state hash "
                  "(default 16: a checkpoint missing a fraction g of its bytes passes with "
                  "probability <= (1-g)^16); the checkpoints a replay loads are hashed whole")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40))
      ->type_name("N");
  sub->add_flag("--whole-checkpoints", o->whole_checkpoints,
                "Read and hash every checkpoint whole instead (bytes read grow with the run's "
                "state times its checkpoints)");
  sub->add_option("--check-certificate", o->check_certificate,
                  "Check a certificate instead: its signature by --verifier-key and, with RUN, "
                  "that it describes that run's log, dataset, final state and model as they are")
      ->type_name("FILE");
  sub->add_option("--verifier-key", o->verifier_key,
                  "With --check-certificate: the verifier's public key (hex or PEM file) that "
                  "must have signed it")
      ->type_name("KEY");
  sub->add_option("--accept", o->accept,
                  "With --check-certificate: also accept a certificate weaker than a "
                  "certification from fresh randomness (else it exits 4 after saying why): "
                  "tolerance (closeness, not exact replay), seed (challenges from a seed the "
                  "trainer might know), fiat-shamir (challenges the trainer could grind); "
                  "repeatable")
      ->type_name("KIND");
  sub->add_option("--status", o->status,
                  "With --check-certificate: the issuer's signed status list, a file or a board's "
                  "URL (http://HOST:PORT/ asks /api/certificates/status): exit 1 when it lists "
                  "the certificate as withdrawn. Without it the check is offline and cannot know "
                  "of a withdrawal")
      ->type_name("FILE_OR_URL");
  commands.on_run(sub, [o] { return verify(*o); });
}

}  // namespace wit::cli
