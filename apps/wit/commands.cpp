#include "apps/wit/commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "apps/wit/board.h"
#include "apps/wit/inspect.h"
#include "apps/wit/query.h"
#include "apps/wit/sample.h"
#include "apps/wit/tokenize.h"
#include "apps/wit/verify.h"
#include "core/error.h"
#include "core/sha256.h"
#include "trainer/data/prepare.h"
#include "trainer/run_config.h"
#include "trainer/train_loop.h"
#include "witness/log/signing.h"

namespace wit::cli {

namespace {

std::map<CLI::App*, std::function<int()>>& actions() {
  static std::map<CLI::App*, std::function<int()>> a;
  return a;
}

}  // namespace

void add_prepare(CLI::App& app) {
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
                  "Directory holding GPT-2's encoder.json and vocab.bpe (default: $WIT_GPT2_VOCAB, "
                  "else where launch/install-deps put them)")
      ->type_name("DIR");
  actions()[sub] = [o] {
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
  };
}

void add_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  auto* sub = app.add_subcommand(
      "tokenize",
      "Encode text into token ids (printed space-separated), decode ids back into text, or "
      "list a corpus's documents with their tokens as `wit prepare` makes them.");
  sub->add_option("input", o->input,
                  "A file (omitted or -: standard input); with --documents, a corpus as `wit "
                  "prepare` takes it (omitted: the built-in King James Bible)");
  sub->add_option("--tokenizer", o->tokenizer, "gpt2 or byte")
      ->check(CLI::IsMember({"byte", "gpt2"}))
      ->capture_default_str();
  sub->add_option("--vocab", o->vocab, "Directory holding GPT-2's encoder.json and vocab.bpe")
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
  actions()[sub] = [o] { return tokenize(*o); };
}

void add_sample(CLI::App& app) {
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
  sub->add_option("--checkpoint", o->checkpoint,
                  "Sample from a checkpoint instead of model.safetensors: a step number or a file")
      ->type_name("STEP|FILE");
  sub->add_option("--tokenizer", o->tokenizer,
                  "byte or gpt2 (default: what the run's dataset manifest records)")
      ->check(CLI::IsMember({"byte", "gpt2"}));
  sub->add_option("--vocab", o->vocab, "Directory holding GPT-2's encoder.json and vocab.bpe")
      ->type_name("DIR");
  sub->add_flag("--stats", o->stats, "Print tokens per second on stderr");
  actions()[sub] = [o] { return sample(*o); };
}

void add_board(CLI::App& app) {
  auto* board = app.add_subcommand(
      "board",
      "The leaderboard that certifies its entries itself: tracks (what entries compete on), the "
      "board's server, submitting runs, verification workers, re-challenges (docs/board.md).");
  board->require_subcommand(1);
  auto tracks_file = std::make_shared<std::filesystem::path>();
  auto runs = std::make_shared<std::vector<std::filesystem::path>>();
  auto* tracks = board->add_subcommand(
      "tracks",
      "List the tracks of a tracks file (YAML: dataset, model family and parameter budget, token "
      "budget, evaluation); with runs, say which tracks each may enter and why not the others "
      "(exit 1 when a run may enter none).");
  tracks->add_option("file", *tracks_file, "The tracks file (e.g. configs/board/tracks.yaml)")
      ->required();
  tracks->add_option("runs", *runs, "Run directories (or witness logs) to check");
  auto data_dir = std::make_shared<std::filesystem::path>();
  auto* dataset = board->add_subcommand(
      "dataset", "Print a prepared dataset's manifest root, data layout and tokenizer as a track's "
                 "dataset entry");
  dataset->add_option("dir", *data_dir, "A prepared data directory")->required();
  auto so = std::make_shared<BoardServeOptions>();
  auto* serve = board->add_subcommand(
      "serve", "Serve the board's pages (HTML, no JavaScript needed) and JSON API (/api/) until "
               "interrupted, verifying every entry: structure and data audit at submission, then "
               "the first, the last and --challenges drawn segments replayed by its own pool and "
               "by participants' workers");
  serve->add_option("--tracks", so->tracks, "The tracks file")->required();
  serve->add_option("--datasets", so->datasets,
                    "Prepared datasets of the tracks (wit prepare); a track whose dataset is not "
                    "among them takes no entries")
      ->check(CLI::ExistingDirectory);
  serve->add_option("--listen", so->listen, "HOST:PORT to listen on")->capture_default_str();
  serve->add_option("--threads", so->threads, "Threads serving requests")->capture_default_str();
  serve->add_option("--audit-threads", so->audit_threads,
                    "Threads auditing submissions (structure and data stages), apart from the "
                    "threads serving pages, uploads and workers")
      ->capture_default_str();
  serve->add_option("--db", so->db,
                    "The board's database: an SQLite file (created if missing) or a "
                    "postgresql:// URL")
      ->capture_default_str();
  serve->add_option("--files", so->files,
                    "Where uploaded files are kept, by content hash (created if missing)")
      ->capture_default_str();
  serve->add_option("--key", so->key,
                    "The board's signing key for receipts and certificates (wit keygen makes one)")
      ->capture_default_str();
  serve->add_option("--pool", so->pool, "The board's own verification workers (threads; 0: none)")
      ->capture_default_str();
  serve->add_option("--challenges", so->challenges,
                    "Segments drawn per entry, after it is committed, besides the first and the last")
      ->capture_default_str();
  serve->add_option("--contribution", so->contribution,
                    "Confirmed replays of other entries' segments a submitter's workers owe before "
                    "its entries are ranked")
      ->capture_default_str();
  serve->add_option("--spot-check", so->spot_check,
                    "Probability that the board replays a segment itself to check a participant's "
                    "report (otherwise another participant's worker checks it)")
      ->capture_default_str();
  serve->add_option("--pool-delay", so->pool_delay,
                    "Seconds the pool leaves an open job to participants' workers before taking it")
      ->capture_default_str();
  serve->add_option("--upload-quota", so->upload_quota,
                    "GiB of unfinished uploads one participant may hold at once")
      ->capture_default_str();
  serve->add_option("--lease", so->lease,
                    "Seconds a job stays leased to a worker that stops renewing it")
      ->capture_default_str();
  auto db = std::make_shared<std::string>("board.sqlite");
  auto name = std::make_shared<std::string>();
  auto admin = std::make_shared<bool>(false);
  auto* participant = board->add_subcommand(
      "participant", "Add a participant to the board's database and print its token, once");
  participant->add_option("name", *name, "The participant's name (unique)")->required();
  participant->add_flag("--admin", *admin, "An operator's token rather than a participant's");
  participant->add_option("--db", *db, "The board's database (as for serve)")->capture_default_str();
  auto upload_files = std::make_shared<std::vector<std::filesystem::path>>();
  auto server = std::make_shared<std::string>();
  auto token = std::make_shared<std::string>();
  auto* upload = board->add_subcommand(
      "upload", "Upload files to a board in pieces; an interrupted upload resumes where the "
                "board says it stopped");
  upload->add_option("files", *upload_files, "Files to upload")->required();
  upload->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  upload->add_option("--token", *token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  auto run_dir = std::make_shared<std::filesystem::path>();
  auto track = std::make_shared<std::string>();
  auto entry_name = std::make_shared<std::string>();
  auto* submit = board->add_subcommand(
      "submit", "Upload a finished run (witness log, config, model, checkpoints) and enter it in a "
                "track; prints the entry and the board's signed receipt");
  submit->add_option("run", *run_dir, "The run directory")->required();
  submit->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  submit->add_option("--token", *token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  submit->add_option("--track", *track, "The track to enter")->required();
  submit->add_option("--name", *entry_name, "The entry's name on the board")->required();
  auto wo = std::make_shared<BoardWorkerOptions>();
  auto* worker = board->add_subcommand(
      "worker", "Replay other participants' segments for a board (a normal MPI job: mpirun -np N "
                "allowed; --cache must then be seen by every rank). Confirmed replays count "
                "towards the contribution a board requires before ranking your entries");
  worker->add_option("--server", wo->server, "The board, http://HOST:PORT/")->required();
  worker->add_option("--token", wo->token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  worker->add_option("--datasets", wo->datasets, "Prepared datasets to replay with (wit prepare)")
      ->check(CLI::ExistingDirectory);
  worker->add_option("--cache", wo->cache, "Where the runs' files are kept, by content hash")
      ->capture_default_str();
  worker->add_option("--name", wo->name, "The worker's name on the board (default: host and pid)");
  worker->add_option("--jobs", wo->jobs, "Stop after this many jobs (0: no limit)")->capture_default_str();
  worker->add_option("--idle-exit", wo->idle_exit,
                     "Stop after this many seconds without a job (0: never)")
      ->capture_default_str();
  auto challenge_entry = std::make_shared<std::string>();
  auto challenge_count = std::make_shared<int64_t>(1);
  auto* challenge = board->add_subcommand(
      "challenge", "Re-challenge an entry: the board draws K more of its segments from its own "
                   "randomness and replays them; the entry's guarantee tightens, or it is struck");
  challenge->add_option("entry", *challenge_entry, "The entry's id")->required();
  challenge->add_option("-c,--count", *challenge_count, "Segments to draw")->capture_default_str();
  challenge->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  challenge->add_option("--token", *token, "A participant's token (default: $WIT_BOARD_TOKEN)");
  auto* show = board->add_subcommand(
      "show", "Print an entry's verification: status, guarantee, the first failure, every check");
  show->add_option("entry", *challenge_entry, "The entry's id")->required();
  show->add_option("--server", *server, "The board, http://HOST:PORT/")->required();
  actions()[board] = [=] {
    if (board->got_subcommand(tracks)) return board_tracks(*tracks_file, *runs);
    if (board->got_subcommand(worker)) return board_worker(*wo);
    if (board->got_subcommand(challenge))
      return board_challenge(*challenge_entry, *challenge_count, *server, *token);
    if (board->got_subcommand(show)) return board_show(*challenge_entry, *server);
    if (board->got_subcommand(submit))
      return board_submit(*run_dir, *server, *token, *track, *entry_name);
    if (board->got_subcommand(upload)) return board_upload(*upload_files, *server, *token);
    if (board->got_subcommand(serve)) return board_serve(*so);
    if (board->got_subcommand(participant)) return board_add_participant(*db, *name, *admin);
    return board_dataset(*data_dir);
  };
}

void add_train(CLI::App& app) {
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
  sub->add_flag("--quiet,-q", o->quiet, "No progress lines");
  sub->footer("Config keys (YAML sections; all have defaults):\n" + run_schema().describe());
  actions()[sub] = [o, sub] {
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
  };
}

void add_config(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("config",
                                 "Print a config fully resolved (every key, defaults filled in), "
                                 "or every key with its meaning when no file is given.");
  sub->add_option("config", *file, "YAML config");
  sub->add_option("--set", *sets, "Override a key: --set section.key=value");
  actions()[sub] = [file, sets] {
    if (file->empty()) {
      fmt::print("{}", run_schema().describe());
      return 0;
    }
    auto c = config::Config::load(*file, run_schema(), *sets);
    run_config_from(c);  // relations between keys
    fmt::print("{}", c.to_yaml());
    return 0;
  };
}

void add_keygen(CLI::App& app) {
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
      "key is never overwritten: remove it first or choose another --out.");
  actions()[sub] = [out] {
    // Resolved here, not as the option's default, so `--help` works without HOME.
    std::filesystem::path priv =
        out->empty() ? witness::default_key_path() : std::filesystem::path(*out);
    std::filesystem::path pub = priv;
    pub += ".pub";
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
  };
}

void add_inspect(CLI::App& app) {
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
  actions()[sub] = [o] { return inspect(*o); };
}

void add_query(CLI::App& app) {
  auto o = std::make_shared<QueryOptions>();
  auto* sub = app.add_subcommand(
      "query",
      "Was a document trained on by a run, and when? Answered exactly from the run's committed "
      "dataset and data order: included (at which steps, micro-batches and rows), held out, in "
      "the dataset but not reached before the run's end, or not in the dataset. Documents are "
      "matched by the SHA-256 of their canonical bytes (\\r\\n read as \\n), as `wit prepare` "
      "hashed them. --proof writes proofs that `wit query --check-proof` verifies alone, given "
      "the run's manifest root and genesis (or a verifier's certificate).");
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
                  "--root and --genesis, or --certificate with --verifier-key")
      ->type_name("FILE");
  sub->add_option("--root", o->root, "Manifest root (64 hex digits) the proof must be for");
  sub->add_option("--genesis", o->genesis, "Run genesis (64 hex digits) the proof must be for");
  sub->add_option("--certificate", o->certificate,
                  "A verifier's certificate naming the run (root, genesis, signed head)")
      ->type_name("FILE");
  sub->add_option("--verifier-key", o->verifier_key,
                  "With --certificate: the verifier's public key that must have signed it")
      ->type_name("KEY");
  actions()[sub] = [o] { return query(*o); };
}

void add_verify(CLI::App& app) {
  auto o = std::make_shared<VerifyCliOptions>();
  auto* sub = app.add_subcommand(
      "verify",
      "Certify a run without trusting its trainer: check the witness log (chains, signatures, "
      "schedules, dataset, every checkpoint file), recompute every step's batch hash and "
      "hyperparameters, replay the first and the last segment and c randomly drawn ones with "
      "the trainer's own step and require every recorded bit to match, check the published "
      "model and the final evaluation. Writes RUN/certificate.json, signed with the verifier's "
      "key, when the run is certified. Exit codes: 0 certified, 1 rejected (or an error), 3 not "
      "reproducible (the run declares a setting no replay can repeat), 4 consistent within "
      "--tolerance (not a certification). Under `mpirun -np N` the replay runs on N processes "
      "(N a power of two dividing train.micro_batches), whatever world size trained the run.");
  sub->add_option("run", o->run, "Run directory");
  sub->add_option("--data", o->data,
                  "The run's dataset (default: where the log says the trainer had it; either way "
                  "it must have the committed root and layout)")
      ->type_name("DIR");
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
  sub->add_option("--check-certificate", o->check_certificate,
                  "Check a certificate instead: its signature by --verifier-key and, with RUN, "
                  "that it describes that run's log, dataset, final state and model as they are")
      ->type_name("FILE");
  sub->add_option("--verifier-key", o->verifier_key,
                  "With --check-certificate: the verifier's public key (hex or PEM file) that "
                  "must have signed it")
      ->type_name("KEY");
  actions()[sub] = [o] { return verify(*o); };
}

int run_selected(CLI::App& app) {
  for (auto* sub : app.get_subcommands())
    if (auto it = actions().find(sub); it != actions().end()) return it->second();
  return 2;
}

}  // namespace wit::cli
