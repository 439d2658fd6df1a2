// Certificates (verify/certificate.h).
#include "verify/certificate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/sha256.h"
#include "core/fs.h"
#include "record/reader.h"

namespace wit::witness {

namespace fs = std::filesystem;
using nlohmann::json;

json sign_certificate(json certificate, const SigningKey& key) {
  certificate.erase("signature");
  certificate.erase("id");
  certificate["verifier_key"] = to_hex(key.public_key().data(), 32);
  // Random, so that a certificate issued again with the same contents (after a withdrawal) is
  // not the withdrawn one.
  std::array<uint8_t, 16> id{};
  for (size_t got = 0; got < id.size();) {
    const ssize_t n = ::getrandom(id.data() + got, id.size() - got, 0);
    if (n < 0 && errno != EINTR) fail("getrandom: {}", std::strerror(errno));
    if (n > 0) got += size_t(n);
  }
  certificate["id"] = to_hex(id.data(), id.size());
  const Signature s = key.sign(std::string(kCertificateFormat) + certificate.dump());
  certificate["signature"] = to_hex(s.data(), s.size());
  return certificate;
}

json sign_status_list(json list, const SigningKey& key) {
  list.erase("signature");
  list["format"] = kStatusListFormat;
  list["issuer_key"] = to_hex(key.public_key().data(), 32);
  const Signature s = key.sign(std::string(kStatusListFormat) + list.dump());
  list["signature"] = to_hex(s.data(), s.size());
  return list;
}

CertificateStatus certificate_status(const json& certificate, const json& list,
                                     const PublicKey& verifier) {
  CertificateStatus out;
  auto text = [](const json& j, const char* name) {
    return j.is_object() && j.contains(name) && j[name].is_string() ? j[name].get<std::string>()
                                                                     : std::string();
  };
  const std::string id = text(certificate, "id");
  if (id.empty()) {
    out.problem = "the certificate has no id, so no status list can name it";
    return out;
  }
  if (text(list, "format") != kStatusListFormat) {
    out.problem = fmt::format("not a {} status list", kStatusListFormat);
    return out;
  }
  const auto sig = signature_from_hex(text(list, "signature"));
  if (!sig || text(list, "issuer_key") != to_hex(verifier.data(), verifier.size())) {
    out.problem = fmt::format("the status list is not signed by the certificate's verifier key {}",
                              key_id(verifier));
    return out;
  }
  json body = list;
  body.erase("signature");
  if (!verify_signature(verifier, std::string(kStatusListFormat) + body.dump(), *sig)) {
    out.problem = "the status list's signature does not match its contents (it was changed)";
    return out;
  }
  out.issued = text(list, "issued");
  const std::string made = text(certificate, "verified_at");
  // Same-format UTC times ("2026-12-06T01:02:03Z") order as strings.
  if (out.issued.size() != 20 || made.size() != 20 || out.issued < made) {
    out.problem = fmt::format(
        "the status list was issued at '{}', before the certificate ('{}'): it cannot say "
        "whether the certificate was withdrawn; fetch a current one",
        out.issued, made);
    return out;
  }
  if (!list.contains("withdrawn") || !list["withdrawn"].is_array()) {
    out.problem = "the status list has no 'withdrawn' array";
    return out;
  }
  for (const json& w : list["withdrawn"])
    if (text(w, "certificate") == id) out.withdrawn = w;
  return out;
}

json run_identity(const WitnessLog& log, const Heads& head, const Digest& final_state_hash) {
  return {{"genesis", to_hex(log.genesis)},
          {"signed_head",
           {{"hash", to_hex(head_hash(head))},
            {"steps", head.steps},
            {"fingerprints", head.fingerprints},
            {"checkpoints", head.checkpoints},
            {"evals", head.evals}}},
          {"manifest_root", to_hex(log.meta.manifest_root)},
          {"data_layout", to_hex(log.meta.data_layout)},
          {"trainer_key", to_hex(log.meta.public_key.data(), 32)},
          {"final_state_hash", to_hex(final_state_hash)}};
}

namespace {

Digest hex_field(const json& c, const char* name) {
  if (!c.contains(name) || !c[name].is_string())
    throw std::runtime_error(fmt::format("field '{}' is missing", name));
  return digest_from_hex(c[name].get<std::string>(), name);
}

}  // namespace

std::string check_certificate(const json& c, const PublicKey& verifier) {
  try {
    if (!c.is_object() || !c.contains("format") || !c["format"].is_string() ||
        c["format"].get<std::string>() != kCertificateFormat)
      return fmt::format("not a {} certificate", kCertificateFormat);
    if (!c.contains("signature") || !c.contains("verifier_key") || !c["signature"].is_string() ||
        !c["verifier_key"].is_string())
      return "the certificate is not signed";
    const PublicKey key = load_public_key(c["verifier_key"].get<std::string>());
    if (key != verifier)
      return fmt::format("signed by verifier key {}, not by the key required ({})", key_id(key),
                         key_id(verifier));
    json body = c;
    body.erase("signature");
    const auto sig = signature_from_hex(c["signature"].get<std::string>());
    if (!sig) return "the signature is not 64 bytes of hex";
    if (!verify_signature(key, std::string(kCertificateFormat) + body.dump(), *sig))
      return "the signature does not match the certificate's contents (a field was changed)";
    return "";
  } catch (const std::exception& e) {
    return std::string("malformed certificate: ") + e.what();
  }
}

bool is_certificate_weakness(const std::string& name) {
  return name == "tolerance" || name == "seed" || name == "fiat-shamir";
}

CertificateStrength certificate_strength(const json& c) {
  try {
    const std::string result = c.at("result").get<std::string>();
    const json& source = c.at("challenge_source");
    const std::string kind = source.at("kind").get<std::string>();
    CertificateStrength s;
    if (result != "certified") {
      s.weakness = "tolerance";
      s.why = fmt::format("it says '{}': closeness on other hardware, not exact replay, and a "
                          "forger who changes results by less than the tolerance passes",
                          result);
    } else if (kind == "fiat-shamir") {
      s.weakness = "fiat-shamir";
      s.why = "its challenges follow from the signed head, which the trainer can vary and "
              "re-sign until they miss a forged segment";
    } else if (kind == "verifier-seed") {
      s.weakness = "seed";
      s.why = "its challenges come from a seed, and its bound holds only if the trainer could "
              "not know that seed";
    } else if (kind != "verifier-random" && kind != "board") {
      fail("unknown challenge source '{}'", kind);
    }
    std::vector<std::string> bounds, colluding;
    for (const json& b : c.at("guarantee").at("bounds")) {
      const double f = b.at("f").get<double>();
      if (f != 0.01 && f != 0.1) continue;
      bounds.push_back(fmt::format("f = {:g} %: rejected with probability >= {:.4g}", 100 * f,
                                   b.at("rejected_with_probability_at_least").get<double>()));
      // A board's certificate also bounds a run whose submitter controls participants' workers.
      if (b.contains("under_collusion"))
        colluding.push_back(fmt::format("f = {:g} %: >= {:.4g}", 100 * f,
                                        b.at("under_collusion").get<double>()));
    }
    if (!colluding.empty())
      bounds.push_back(fmt::format("if participants collude with the submitter: {}",
                                   fmt::join(colluding, ", ")));
    s.summary = fmt::format("{}, challenges from {} ({}); {}", result, kind,
                            source.value("detail", std::string("?")),
                            bounds.empty() ? std::string("no bound stated")
                                           : fmt::format("{}", fmt::join(bounds, "; ")));
    return s;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("certificate: {}", e.what());
  }
}

std::string check_certificate_against_run(const json& c, const fs::path& run) {
  try {
    const fs::path log_file = run / kLogFileName;
    if (!fs::exists(log_file)) return fmt::format("{} has no {}", run.string(), kLogFileName);
    const WitnessLog log = read_log(log_file);
    const LogReport lr = check_log(log);
    if (!lr.ok()) return fmt::format("the run's log does not verify: {}", lr.problems.front().text());
    if (!lr.complete || !lr.signed_heads) return "the run's log is not complete and signed";
    auto differs = [&](const char* field, const std::string& run_value) -> std::string {
      if (!c.contains(field) || !c[field].is_string() || c[field].get<std::string>() != run_value)
        return fmt::format("field {} is not the run's ({}): the certificate is for another run "
                           "or another state of it",
                           field, run_value.substr(0, 16));
      return "";
    };
    for (auto [field, value] : std::initializer_list<std::pair<const char*, std::string>>{
             {"genesis", to_hex(log.genesis)},
             {"manifest_root", to_hex(log.meta.manifest_root)},
             {"data_layout", to_hex(log.meta.data_layout)},
             {"trainer_key", to_hex(log.meta.public_key.data(), 32)},
             {"final_state_hash", to_hex(log.tables.checkpoints.back().fields.state_hash)}})
      if (auto d = differs(field, value); !d.empty()) return d;
    const json& head = c.at("signed_head");
    if (!head.is_object() || !head.contains("hash") || !head["hash"].is_string() ||
        head["hash"].get<std::string>() != to_hex(head_hash(*lr.signed_heads)))
      return "field signed_head is not the run's last signed head: the log changed since";
    const fs::path model = run / "model.safetensors";
    if (!fs::exists(model)) return fmt::format("{} is missing", model.string());
    if (!fs::is_regular_file(model)) return fmt::format("{} is not a regular file", model.string());
    if (hex_field(c, "model_sha256") != sha256_file(model))  // streamed: any size
      return fmt::format("{} is not the model the certificate names (model_sha256)",
                         model.string());
    return "";
  } catch (const std::exception& e) {
    return std::string("cannot check the certificate against the run: ") + e.what();
  }
}

}  // namespace wit::witness
