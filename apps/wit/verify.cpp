#include "apps/wit/verify.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/fs.h"
#include "trainer/witnessing.h"
#include "witness/verify/verify.h"

namespace wit::cli {

namespace fs = std::filesystem;

int verify(const VerifyCliOptions& o) {
  if (!o.check_certificate.empty()) {
    const auto c = nlohmann::json::parse(read_text_file(o.check_certificate), nullptr, false);
    if (c.is_discarded()) fail("{} is not JSON: not a certificate", o.check_certificate.string());
    const std::string problem = witness::check_certificate(c);
    if (!problem.empty()) {
      fmt::print("INVALID certificate {}: {}\n", o.check_certificate.string(), problem);
      return 1;
    }
    fmt::print("valid certificate: run {} {} by verifier key {} ({} of {} segments replayed)\n",
               c.value("run", "?"), c.value("result", "?"),
               witness::key_id(witness::load_public_key(c.value("verifier_key", ""))),
               c["challenged_segments"].size(), c.value("segments", 0));
    return 0;
  }
  if (o.run.empty()) fail("wit verify needs a run directory (or --check-certificate FILE)");
  witness::VerifyOptions v;
  v.run = o.run;
  v.data = o.data;
  v.challenges = o.challenges >= 0 ? o.challenges : witness::challenges_for(o.target, o.confidence);
  if (v.challenges < 1) fail("--challenges must be at least 1");
  if (o.seed >= 0) v.seed = uint64_t(o.seed);
  if (!o.trainer_key.empty()) v.trusted_key = witness::load_public_key(o.trainer_key);
  // The verifier's key signs the certificate: load it before the (long) replay.
  const witness::SigningKey key = training_key(o.key, false);
  fmt::print("verifying {} with {} challenge(s)\n", o.run.string(), v.challenges);
  const witness::VerifyReport r = witness::verify_run(v, [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  if (!r.certified) {
    fmt::print("REJECTED: {}\n", [&] {
      for (auto& s : r.stages)
        if (!s.passed) return s.name + ": " + s.detail;
      return std::string("?");
    }());
    return 1;
  }
  const auto cert = witness::sign_certificate(r.certificate, key);
  const fs::path file = o.run / "certificate.json";
  write_file_atomic(file, cert.dump(2) + "\n");
  fmt::print("CERTIFIED: {} ({} of {} segments replayed exactly)\n  {}\n  certificate {}\n",
             o.run.string(), r.challenged.size(), r.segments,
             cert["guarantee"]["statement"].get<std::string>(), file.string());
  for (auto& b : cert["guarantee"]["bounds"])
    fmt::print("  f = {:<5} -> rejected with probability >= {:.4f}\n", b["f"].get<double>(),
               b["rejected_with_probability_at_least"].get<double>());
  return 0;
}

}  // namespace wit::cli
