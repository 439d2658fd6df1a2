#include "apps/wit/query.h"
#include "apps/wit/verify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>
#include <memory>
#include <map>

#include "core/error.h"
#include "core/fs.h"
#include "core/json.h"
#include "trainer/data/corpus.h"
#include "trainer/data/dataset.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/split.h"
#include "record/run_config.h"
#include "query/query.h"
#include "verify/verify.h"

namespace wit::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What the checker trusts: a root and genesis it was given, or those a verifier certified.
// `strength`: what a certificate it was given says, and how strongly; `tokenizer`: how the
// certified dataset's records name documents (its dataset.tokenizer), empty when none says.
// Both from the one reading of the certificate whose signature was checked.
witness::TrustedRun trusted_run(const QueryOptions& o,
                                std::optional<witness::CertificateStrength>& strength,
                                std::string& tokenizer) {
  witness::TrustedRun t;
  if (!o.certificate.empty()) {
    if (!o.root.empty() || !o.genesis.empty() || !o.head.empty())
      fail("--check-proof: give --certificate or --root, --genesis and --head, not both");
    if (o.verifier_key.empty())
      fail("--certificate needs --verifier-key KEY: a certificate counts only when a verifier "
           "you trust signed it");
    const auto c = parse_untrusted_json(read_text_file(o.certificate));
    if (c.is_discarded()) fail("{} is not JSON: not a certificate", o.certificate.string());
    const std::string problem =
        witness::check_certificate(c, witness::load_public_key(o.verifier_key));
    if (!problem.empty()) fail("certificate {}: {}", o.certificate.string(), problem);
    strength = witness::certificate_strength(c);
    if (c.contains("dataset") && c["dataset"].is_object() && c["dataset"].contains("tokenizer") &&
        c["dataset"]["tokenizer"].is_string())
      tokenizer = c["dataset"]["tokenizer"].get<std::string>();
    t.manifest_root = digest_from_hex(c.at("manifest_root").get<std::string>(), "manifest_root");
    t.genesis = digest_from_hex(c.at("genesis").get<std::string>(), "genesis");
    t.signed_head =
        digest_from_hex(c.at("signed_head").at("hash").get<std::string>(), "signed_head");
    return t;
  }
  if (o.root.empty() || o.genesis.empty() || o.head.empty())
    fail(
        "--check-proof needs the run it is about: --root HEX, --genesis HEX and --head HEX (from "
        "the run's announcement or `wit inspect RUN --json`: manifest_root, genesis, "
        "signed_head.hash), or --certificate FILE --verifier-key KEY. The head matters: a proof "
        "made before the run went on says nothing of the steps after it");
  t.manifest_root = digest_from_hex(o.root, "--root");
  t.genesis = digest_from_hex(o.genesis, "--genesis");
  t.signed_head = digest_from_hex(o.head, "--head");
  return t;
}

int check_proof_file(const QueryOptions& o) {
  std::optional<witness::CertificateStrength> strength;
  std::string tokenizer;
  const witness::TrustedRun trusted = trusted_run(o, strength, tokenizer);
  if (strength) {
    // The proofs are only as good as the certificate that names the run.
    fmt::print("certificate: {}\n", strength->summary);
    if (int weak = weaker_certificate_status(*strength, o.accept, o.certificate)) return weak;
  } else if (!o.accept.empty()) {
    fail("--accept applies to --certificate");
  }
  const std::string text = read_text_file(o.check_proof);
  const json parsed = parse_untrusted_json(text);
  if (parsed.is_discarded()) fail("{} is not JSON: not a query proof", o.check_proof.string());
  const json proofs = parsed.is_array() ? parsed : json::array({parsed});
  if (proofs.empty()) fail("{} holds no proofs", o.check_proof.string());
  // With --doc, each proof must be about one of the asker's documents: a proof is about the
  // hash it names, and a valid proof of another document's (a variant, or text hashed another
  // way) says nothing of this one. A document's hash is the text dataset's way or llm.c's.
  // A certificate says how the run's dataset names documents (its verifier checked every record
  // so): then only that way.
  std::map<std::string, std::vector<std::string>> asked;  // hex hash -> files with it
  std::map<std::string, std::string> how;                 // hex hash -> "as text" or "as llm.c tokens"
  std::unique_ptr<data::Gpt2Tokenizer> gpt2;
  for (const auto& f : o.docs) {
    const std::string raw = read_text_file(f);
    auto ask = [&](const Digest& d, const char* way) {
      asked[to_hex(d)].push_back(f.string());
      how[to_hex(d)] = way;
    };
    if (tokenizer != "external") ask(witness::document_sha256(raw), "hashed as text");
    if (tokenizer == "byte" || tokenizer == "gpt2") continue;
    if (!gpt2 && (tokenizer == "external" || fs::exists(data::gpt2_vocab_dir({}) / "gpt2.tiktoken")))
      gpt2 = data::Gpt2Tokenizer::load(data::gpt2_vocab_dir({}));
    if (gpt2) ask(witness::llmc_document_sha256(raw, *gpt2), "as llm.c tokens");
  }
  std::set<std::string> answered;
  int failed = 0;
  size_t valid = 0;
  uint64_t walk_budget = witness::kProofFileWalkBudget;
  for (size_t i = 0; i < proofs.size(); ++i) {
    const witness::ProofCheck c = witness::check_proof(proofs[i], trusted, &walk_budget);
    const std::string doc = proofs[i].is_object() && proofs[i].contains("document_sha256") &&
                                    proofs[i]["document_sha256"].is_string()
                                ? proofs[i]["document_sha256"].get<std::string>()
                                : "?";
    const auto of = asked.find(doc);
    if (!c.ok) {
      fmt::print("INVALID  proof {} (document {}): {}\n", i, doc, c.reason);
    } else if (!o.docs.empty() && of == asked.end()) {
      fmt::print("INVALID  proof {} (document {}): valid, but about none of the documents given "
                 "with --doc\n", i, doc);
    } else {
      const std::string names =
          of == asked.end() ? doc : fmt::format("{} ({})", fmt::join(of->second, ", "), how[doc]);
      fmt::print("valid    {} {}: {}\n", names, c.verdict, c.reason);
      if (of != asked.end()) answered.insert(of->second.begin(), of->second.end());
      ++valid;
    }
    failed += !c.ok || (!o.docs.empty() && of == asked.end());
  }
  for (const auto& f : o.docs)
    if (!answered.count(f.string())) {
      fmt::print("MISSING  {}: no proof in {} is about it\n", f.string(), o.check_proof.string());
      ++failed;
    }
  if (proofs.size() > 1)
    fmt::print("{} of {} proofs valid for run {}\n", valid, proofs.size(),
               to_hex(trusted.genesis).substr(0, 16));
  return failed ? 1 : 0;
}

std::string describe(const witness::Answer& a, const witness::RunFacts& run) {
  using witness::Verdict;
  const std::string ids = [&] {
    std::string s;
    for (auto id : a.document_ids) s += (s.empty() ? "" : ", ") + std::to_string(id);
    return s;
  }();
  switch (a.verdict) {
    case Verdict::Included: {
      std::string steps;
      size_t shown = 0;
      for (auto& o : a.occurrences) {
        if (shown++ == 8) {
          steps += fmt::format(", … ({} in all)", a.occurrences.size());
          break;
        }
        steps += fmt::format("{}step {} (micro-batch {}, row {}, epoch {})",
                             steps.empty() ? "" : ", ", o.step, o.micro, o.row, o.epoch);
      }
      return fmt::format("document {} (train), in {} trained sample(s): {}", ids,
                         a.occurrences.size(), steps);
    }
    case Verdict::HeldOut:
      return fmt::format("document {} (val): held out, never in the training stream", ids);
    case Verdict::NotReached:
      return fmt::format(
          "document {} (train): none of its samples came before the run's end "
          "(after {} steps{})",
          ids, run.steps,
          run.steps < run.total_steps
              ? fmt::format(" of the {} its config plans: the signed log ends there, so a later "
                            "resume may still train on it",
                            run.total_steps)
              : "");
    case Verdict::NotInDataset:
      return "no document of the run's dataset has this content";
    case Verdict::Empty:
      return "an empty document: `wit prepare` skips those, so it was never trained on";
  }
  return "";
}

json answer_json(const witness::Answer& a, const witness::RunFacts& run) {
  json occ = json::array();
  for (auto& o : a.occurrences)
    occ.push_back({{"document_id", o.document_id},
                   {"sample", o.sample},
                   {"position", o.position},
                   {"epoch", o.epoch},
                   {"step", o.step},
                   {"micro", o.micro},
                   {"row", o.row}});
  return {{"document", a.label},
          {"sha256", to_hex(a.sha256)},
          {"verdict", witness::verdict_name(a.verdict)},
          {"document_ids", a.document_ids},
          // Where the answer ends: the signed steps, and whether they are all the config plans.
          {"steps", run.steps},
          {"complete", run.steps >= run.total_steps},
          {"split", a.split},
          {"occurrences", occ}};
}

}  // namespace

int query(const QueryOptions& o) {
  if (!o.check_proof.empty()) {
    if (!o.doc_ids.empty() || !o.jsonl.empty() || !o.split.empty() || !o.run.empty())
      fail("--check-proof takes the proof file and the run it is about (--certificate, or "
           "--root, --genesis and --head), and --doc FILE for the documents the proofs must be "
           "about; not a run directory, --doc-id, --jsonl or --split");
    return check_proof_file(o);
  }
  if (o.run.empty())
    fail("wit query needs a run directory (or --check-proof FILE with the run it is about)");
  if (o.docs.empty() && o.doc_ids.empty() && o.jsonl.empty() && o.split.empty())
    fail("nothing to ask: give --doc FILE, --doc-id ID, --jsonl FILE or --split val");
  if (!o.split.empty() && o.split != "val")
    fail("--split {}: only the held-out split (val) has a contamination report", o.split);

  const fs::path log_file = o.run / witness::kLogFileName;
  if (!fs::exists(log_file))
    fail("{} has no {}: not a run directory of a witnessed run", o.run.string(),
         witness::kLogFileName);
  const witness::WitnessLog log = witness::read_log(log_file);
  const witness::LogReport report = witness::check_log(log);
  // A log that does not verify answers nothing: its facts could be anyone's.
  if (!report.ok())
    fail("{} does not verify ({}): no answer is given for a log whose chain is broken",
         log_file.string(), report.problems.front().text());
  fs::path data_dir = o.data.empty() ? witness::dataset_hint(log) : o.data;
  if (data_dir.empty())
    fail("{} does not say where its dataset was: give it with --data", log_file.string());
  const fs::path manifest_file = data_dir / data::kManifestFile;
  if (!fs::exists(manifest_file))
    fail("{} is not a prepared dataset (no {}): give the run's dataset with --data",
         data_dir.string(), data::kManifestFile);
  const witness::DataIndex index(data::read_manifest(manifest_file),
                                 witness::RunFacts::from_log(log, report), data_dir.string());
  // Only now, with the manifest bound to the run, and only for text: its tokenizer label, which
  // decides how text is hashed, against its first records (from the shards).
  if (!o.docs.empty() || !o.jsonl.empty()) data::Dataset::open(data_dir).check_tokenizer_label();
  const data::Manifest& manifest = index.manifest();

  json proofs = json::array();
  size_t answered = 0, included = 0;
  auto answer = [&](const witness::Answer& a) {
    ++answered;
    included += a.verdict == witness::Verdict::Included;
    if (o.json)
      fmt::print("{}\n", answer_json(a, index.run()).dump());
    else if (o.split.empty())
      fmt::print("{:<14} {}  sha256 {}…: {}\n", witness::verdict_name(a.verdict), a.label,
                 to_hex(a.sha256).substr(0, 16), describe(a, index.run()));
    if (!o.proof.empty() && a.verdict != witness::Verdict::Empty) proofs.push_back(index.proof(a));
    std::fflush(stdout);
  };

  for (auto& f : o.docs) {
    if (fs::is_directory(f))
      fail("--doc {} is a directory: give one file per document", f.string());
    answer(index.query_bytes(read_text_file(f), f.string()));
  }
  for (uint64_t id : o.doc_ids) answer(index.query_id(id));
  if (!o.jsonl.empty())
    data::read_jsonl_documents(
        o.jsonl, o.text_field,
        [&](data::Document&& d) { answer(index.query_bytes(d.text, d.source)); },
        /*canonical=*/false);  // query_bytes hashes as the dataset's records do
  auto write_proofs = [&] {
    if (o.proof.empty()) return;
    const json out = proofs.size() == 1 ? proofs[0] : proofs;
    write_file_atomic(o.proof, out.dump(1) + "\n");
    if (!o.json) fmt::print("{} proof(s) written to {}\n", proofs.size(), o.proof.string());
  };
  int rc = 0;
  if (o.split == "val") {
    size_t held_out = 0;
    Sha256 list;  // a digest of the held-out documents' hashes, in manifest order
    for (auto& d : manifest.documents) {
      if (d.split != data::kSplitVal) continue;
      const witness::Answer a = index.query_id(d.id);
      held_out += a.verdict == witness::Verdict::HeldOut;
      list.update(d.sha256.data(), d.sha256.size());
      answer(a);
    }
    const std::string digest = to_hex(list.finish());
    const bool clean = included == 0 && held_out == answered;
    if (o.json)
      fmt::print("{}\n", json{{"split", "val"},
                              {"documents", answered},
                              {"excluded", held_out},
                              {"included", included},
                              {"manifest_root", to_hex(manifest.root)},
                              {"held_out_digest", digest},
                              {"steps", index.run().steps}}
                             .dump());
    else
      fmt::print(
          "{}: {} held-out document(s) of dataset {}, {} excluded from training, {} included "
          "(through step {}; digest of their hashes {})\n",
          clean ? "no contamination" : "CONTAMINATED", answered,
          to_hex(manifest.root).substr(0, 16), held_out, included,
          index.run().steps == 0 ? 0 : index.run().steps - 1, digest.substr(0, 16));
    rc = clean ? 0 : 1;
  }
  write_proofs();
  return rc;
}

}  // namespace wit::cli
