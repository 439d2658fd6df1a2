#include "apps/wit/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "core/json.h"
#include "trainer/dist/mpi_communicator.h"
#include "trainer/witnessing.h"
#include "verify/verify.h"
#ifdef WIT_HAVE_BOARD
#include "board/client.h"
#endif

namespace wit::cli {

namespace fs = std::filesystem;

namespace {

uint64_t parse_seed(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 20)
    fail("--seed {}: the seed must be a non-negative integer below 2^64", text);
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) fail("--seed {}: the seed must be below 2^64", text);
  return v;
}

}  // namespace

int weaker_certificate_status(const witness::CertificateStrength& strength,
                              const std::vector<std::string>& accept, const fs::path& file) {
  for (const std::string& a : accept)
    if (!witness::is_certificate_weakness(a))
      fail("--accept {}: expected tolerance, seed or fiat-shamir", a);
  if (strength.weakness.empty() ||
      std::find(accept.begin(), accept.end(), strength.weakness) != accept.end())
    return 0;
  fmt::print(stderr,
             "wit: certificate {} is weaker than a certification from fresh randomness: {}. "
             "Accept it as such with --accept {}\n",
             file.string(), strength.why, strength.weakness);
  return kExitWithinTolerance;
}

namespace {

// An issuer's status list: a file, or fetched from a board (its root or the list's URL).
nlohmann::json status_list(const std::string& where) {
  std::string text;
  if (where.rfind("http://", 0) == 0) {
#ifdef WIT_HAVE_BOARD
    const size_t slash = where.find('/', 7);
    const std::string server = slash == std::string::npos ? where + "/" : where.substr(0, slash + 1);
    std::string target = slash == std::string::npos ? "/" : where.substr(slash);
    if (target == "/") target = "/api/certificates/status";
    return board::Client(server, "").call("GET", target);
#else
    fail("--status {}: this wit was built without the board client; fetch the list and give its "
         "file",
         where);
#endif
  }
  text = read_text_file(where);
  auto list = parse_untrusted_json(text);
  if (list.is_discarded()) fail("--status {}: not JSON, not a status list", where);
  return list;
}

int check_certificate_file(const VerifyCliOptions& o) {
  if (o.verifier_key.empty())
    fail(
        "--check-certificate needs --verifier-key KEY: a certificate proves something only when "
        "it is signed by a verifier you trust, and anyone can sign one with a key of their own");
  const witness::PublicKey verifier = witness::load_public_key(o.verifier_key);
  const auto c = parse_untrusted_json(read_text_file(o.check_certificate));
  if (c.is_discarded()) fail("{} is not JSON: not a certificate", o.check_certificate.string());
  std::string problem = witness::check_certificate(c, verifier);
  if (problem.empty() && !o.run.empty()) problem = witness::check_certificate_against_run(c, o.run);
  if (!problem.empty()) {
    fmt::print("INVALID certificate {}: {}\n", o.check_certificate.string(), problem);
    return 1;
  }
  const witness::CertificateStrength strength = witness::certificate_strength(c);
  fmt::print("valid certificate: run {} {} by verifier key {} ({} of {} segments replayed){}\n",
             c.value("run", "?"), c.value("result", "?"), witness::key_id(verifier),
             c["challenged_segments"].size(), c.value("segments", 0),
             o.run.empty() ? "; not checked against a run (give RUN to check its files)"
                           : fmt::format("; it describes {} as it is now", o.run.string()));
  fmt::print("strength: {}\n", strength.summary);
  if (o.status.empty()) {
    fmt::print(
        "withdrawal: not checked: offline, this cannot know whether the issuer has withdrawn the "
        "certificate since (--status FILE_OR_URL consults its signed status list)\n");
  } else {
    const witness::CertificateStatus st =
        witness::certificate_status(c, status_list(o.status), verifier);
    if (!st.problem.empty()) fail("--status {}: {}", o.status, st.problem);
    if (!st.withdrawn.is_null()) {
      fmt::print("WITHDRAWN certificate {}: {} at {}: {} (status list of {})\n",
                 o.check_certificate.string(), st.withdrawn.value("status", "withdrawn"),
                 st.withdrawn.value("withdrawn", "?"), st.withdrawn.value("reason", "?"), st.issued);
      return 1;
    }
    fmt::print("withdrawal: not withdrawn, by the issuer's status list of {}\n", st.issued);
  }
  return weaker_certificate_status(strength, o.accept, o.check_certificate);
}

// The verification itself, on every rank of the job.
int verify_on(const VerifyCliOptions& o, dist::Communicator* comm) {
  const bool root = comm->is_root();
  witness::VerifyOptions v;
  v.run = o.run;
  v.data = o.data;
  v.init_from = o.init_from;
  v.choice_eval = o.choice_eval;
  v.mode = o.mode;
  if (o.segment && *o.segment <= 0)
    fail("--segment must be a positive number of steps, got {}", *o.segment);
  v.segment = o.segment.value_or(0);  // 0: the library's default, train.checkpoint_every
  v.challenges = o.challenges >= 0 ? o.challenges : witness::challenges_for(o.target, o.confidence);
  if (v.challenges < 1) fail("--challenges must be at least 1");
  if (!o.seed.empty()) {
    v.source = witness::ChallengeSource::VerifierSeed;
    v.seed = parse_seed(o.seed);
  }
  if (o.fiat_shamir) {
    v.source = witness::ChallengeSource::FiatShamir;
    v.grinding_bits = o.grinding_bits;
  }
  if (o.tolerance >= 0) v.tolerance = o.tolerance;
  v.checkpoint_leaves = o.checkpoint_leaves;
  v.whole_checkpoints = o.whole_checkpoints;
  if (!o.trainer_key.empty()) v.trusted_key = witness::load_public_key(o.trainer_key);
  // The verifier's key signs the certificate: load it before the (long) replay.
  std::optional<witness::SigningKey> key;
  if (root) key = training_key(o.key, false);
  if (root)
    fmt::print("verifying {} with {} challenge(s) on {} process(es){}\n", o.run.string(),
               v.challenges, comm->size(),
               v.tolerance ? fmt::format(", tolerance {:.3g}", *v.tolerance) : "");
  const witness::VerifyReport r = witness::verify_run(v, *comm, [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  const witness::VerifyCost& c = r.cost;
  if (root && c.replayed_steps > 0)
    fmt::print(
        "cost: {} steps replayed in {:.2f}s ({:.3f}s/step; the trainer logged {:.3f}s/step), "
        "{} checkpoint load(s) in {:.2f}s, data audit {:.2f}s, {:.1f}s in all; {:.1f} MB of "
        "checkpoints read to check their availability\n",
        c.replayed_steps, c.replay_seconds, c.replay_seconds / double(c.replayed_steps),
        c.logged_seconds / double(c.replayed_steps), c.loads, c.load_seconds, c.audit_seconds,
        c.total_seconds, double(c.checkpoint_bytes_checked) / 1e6);
  if (!root)
    return r.outcome == witness::Outcome::Rejected                    ? 1
           : r.outcome == witness::Outcome::NotReproducible           ? kExitNotReproducible
           : r.outcome == witness::Outcome::ConsistentWithinTolerance ? kExitWithinTolerance
                                                                      : 0;
  if (r.outcome == witness::Outcome::Rejected) {
    fmt::print("REJECTED: {}\n", r.reason);
    return 1;
  }
  if (r.outcome == witness::Outcome::NotReproducible) {
    fmt::print(
        "NOT REPRODUCIBLE: {}\n  no certificate: this is not evidence of fraud, and not "
        "a certification either\n",
        r.reason);
    return kExitNotReproducible;
  }
  const auto cert = witness::sign_certificate(r.certificate, *key);
  const fs::path file = o.run / "certificate.json";
  std::string verdict;
  if (r.outcome == witness::Outcome::ConsistentWithinTolerance) {
    const witness::Distances& d = r.distances;
    verdict = fmt::format(
        "CONSISTENT WITHIN TOLERANCE: {} ({} of {} segments replayed; not certified: {})\n"
        "  largest distances seen: loss {:.3g}, grad_norm {:.3g}, probe log-prob {:.3g}, eval "
        "{:.3g}, checkpointed weights {:.3g}, AdamW moments {:.3g}\n",
        o.run.string(), r.challenged.size(), r.segments, r.reason, d.loss, d.grad_norm,
        d.probe_logprob, d.eval, d.weights, d.moments);
  } else {
    verdict = fmt::format("CERTIFIED: {} ({} of {} segments replayed exactly)\n  {}\n",
                          o.run.string(), r.challenged.size(), r.segments,
                          cert["guarantee"]["statement"].get<std::string>());
    for (auto& b : cert["guarantee"]["bounds"])
      verdict += fmt::format("  f = {:<5} -> rejected with probability >= {:.4f}\n",
                             b["f"].get<double>(),
                             b["rejected_with_probability_at_least"].get<double>());
  }
  // The same for people: what was checked, by whom, with which result.
  std::string summary = verdict;
  summary += fmt::format(
      "  run genesis {}, signed head {} ({} steps), manifest root {}, trainer key {}\n"
      "  final state {}, model.safetensors sha256 {}\n",
      cert["genesis"].get<std::string>().substr(0, 16),
      cert["signed_head"]["hash"].get<std::string>().substr(0, 16),
      cert["signed_head"]["steps"].get<uint64_t>(),
      cert["manifest_root"].get<std::string>().substr(0, 16),
      cert["trainer_key"].get<std::string>().substr(0, 16),
      cert["final_state_hash"].get<std::string>().substr(0, 16),
      cert["model_sha256"].get<std::string>().substr(0, 16));
  summary += fmt::format("  challenges: {} ({}), replayed on {}\n", r.draws, r.challenge_source,
                         cert["replayed_on"].get<std::string>());
  summary += fmt::format("  replay compute: {}\n", cert["replay_compute"].dump());
  for (auto& st : r.stages) summary += fmt::format("  {:<11} passed: {}\n", st.name, st.detail);
  summary += fmt::format("  verifier key {}, {}; signed certificate {}\n",
                         witness::key_id(key->public_key()),
                         cert["verified_at"].get<std::string>(), file.string());
  write_file_atomic(file, cert.dump(2) + "\n");
  write_file_atomic(o.run / "certificate.txt", summary);
  fmt::print("{}  certificate {} (summary: certificate.txt)\n", verdict, file.string());
  return r.outcome == witness::Outcome::ConsistentWithinTolerance ? kExitWithinTolerance : 0;
}

}  // namespace

int verify(const VerifyCliOptions& o) {
  if (!o.check_certificate.empty()) return check_certificate_file(o);
  if (!o.status.empty())
    fail("--status {} checks a certificate: give it with --check-certificate FILE", o.status);
  if (o.run.empty()) fail("wit verify needs a run directory (or --check-certificate FILE)");
  auto comm = dist::make_communicator();
  try {
    return verify_on(o, comm.get());
  } catch (const SharedError&) {
    throw;  // every rank raised it: each ends on its own, rank 0 reports
  } catch (const std::exception& e) {
    if (comm->size() == 1) throw;
    // A failure on this rank alone: the others may be waiting for it in a collective. One
    // message, then the whole job ends; no rank writes a certificate.
    fmt::print(stderr, "wit: error (rank {} of {}): {}; ending the verification, no certificate\n",
               comm->rank(), comm->size(), e.what());
    std::fflush(stderr);
    comm->abort(1);
    throw;
  }
}

}  // namespace wit::cli
