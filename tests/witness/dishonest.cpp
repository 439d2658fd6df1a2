// A dishonest trainer, for tests: it rewrites a run's witness log to lie in one chosen way and
// signs the result with the run's own key, so the log is well-formed, chained and correctly
// signed. Only replay, the data audit or the published files can give it away.
//
//   wit_test_dishonest RUN KEY ATTACK [ARGS...]
//     misreport-lr STEP          log twice the learning rate applied at STEP
//     misreport-clip STEP        log another clipping threshold at STEP
//     other-batch STEP           log the hash of another batch than the one trained at STEP
//     forge-loss STEP...         log other loss bits at each STEP (a forged step)
//     skip STEP                  log STEP as done while computing nothing (a copy of STEP-1)
//     truncate N                 drop every step from N on
//     inflate-eval               log a better final val loss
//     splice-checkpoint STEP HEX log another state hash for the checkpoint after STEP
//     claim-seed SEED            claim the run started from another initialisation seed
#include <fmt/format.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "witness/log/reader.h"
#include "witness/log/writer.h"

namespace wit::witness {
namespace {

// Recomputes every hash and anchor of `t` from its fields and signs the final heads.
void rechain_and_sign(const RunMeta& meta, Tables& t, const SigningKey& key) {
  const Digest genesis = meta.genesis();
  Digest prev = genesis;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    t.steps[i].fields.step = i;
    t.steps[i].prev = prev;
    t.steps[i].hash = record_hash(prev, t.steps[i].fields);
    prev = t.steps[i].hash;
  }
  auto side = [&](auto& rows, auto hash_fn) {
    Digest p = genesis;
    for (auto& r : rows) {
      r.anchor = r.fields.step == 0 ? genesis : t.steps.at(r.fields.step - 1).hash;
      r.prev = p;
      r.hash = hash_fn(p, r.anchor, r.fields);
      p = r.hash;
    }
  };
  side(t.probes, probe_hash);
  side(t.checkpoints, checkpoint_hash);
  side(t.evals, eval_hash);
  SignatureRow s;
  s.heads =
      heads_of(genesis, t, t.steps.size(), t.probes.size(), t.checkpoints.size(), t.evals.size());
  s.head = head_hash(s.heads);
  s.public_key = key.public_key();
  s.signature = key.sign(signed_message(s.head));
  t.signatures = {s};
}

float other_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u ^= 0x40;
  std::memcpy(&v, &u, 4);
  return v;
}

template <typename Rows>
void drop_after(Rows& rows, uint64_t n) {
  Rows kept;
  for (auto& r : rows)
    if (r.fields.step <= n) kept.push_back(r);
  rows = kept;
}

int run(int argc, char** argv) {
  if (argc < 4) fail("usage: wit_test_dishonest RUN KEY ATTACK [ARGS...]");
  const std::filesystem::path file = std::filesystem::path(argv[1]) / kLogFileName;
  const SigningKey key = SigningKey::load(argv[2]);
  const std::string attack = argv[3];
  auto arg = [&](int i) -> uint64_t {
    if (argc <= 4 + i) fail("{} needs an argument", attack);
    return std::stoull(argv[4 + i]);
  };
  WitnessLog log = read_log(file);
  RunMeta meta = log.meta;
  Tables& t = log.tables;
  if (attack == "misreport-lr") {
    t.steps.at(arg(0)).fields.lr *= 2;
  } else if (attack == "misreport-clip") {
    t.steps.at(arg(0)).fields.grad_clip += 0.5f;
  } else if (attack == "other-batch") {
    t.steps.at(arg(0)).fields.batch_hash = sha256("a batch that was not trained");
  } else if (attack == "forge-loss") {
    for (int i = 4; i < argc; ++i) {
      auto& f = t.steps.at(std::stoull(argv[i])).fields;
      f.loss = other_bits(f.loss);
    }
  } else if (attack == "skip") {
    const uint64_t s = arg(0);
    StepFields copy = t.steps.at(s - 1).fields;
    copy.batch_hash = t.steps.at(s).fields.batch_hash;  // claims the right data
    copy.rng_commitment = t.steps.at(s).fields.rng_commitment;
    copy.lr = t.steps.at(s).fields.lr;
    t.steps.at(s).fields = copy;
  } else if (attack == "truncate") {
    const uint64_t n = arg(0);
    t.steps.resize(n);
    drop_after(t.probes, n);
    drop_after(t.checkpoints, n);
    drop_after(t.evals, n);
  } else if (attack == "inflate-eval") {
    t.evals.back().fields.value *= 0.5f;
  } else if (attack == "splice-checkpoint") {
    const uint64_t s = arg(0);
    if (argc < 6) fail("splice-checkpoint needs STEP and HEX");
    for (auto& c : t.checkpoints)
      if (c.fields.step == s) c.fields.state_hash = digest_from_hex(argv[5], "state hash");
  } else if (attack == "claim-seed") {
    // The run's weights came from elsewhere; the liar claims an initialisation from seed SEED
    // and recommits every step's generator seeds to match the claim (the seed derivation is
    // public: trainer/step.cpp micro_batch_seed).
    const uint64_t claimed = arg(0);
    for (auto& row : t.steps) {
      std::vector<uint64_t> seeds;
      for (uint64_t i = 0; i < meta.micro_batches; ++i)
        seeds.push_back(digest_prefix_u64(Sha256()
                                              .update("wit-rng-v1")
                                              .update_u64(claimed)
                                              .update_u64(row.fields.step)
                                              .update_u64(i)
                                              .finish()));
      row.fields.rng_commitment = rng_commitment(seeds);
    }
    const std::string seed = std::to_string(claimed);
    for (std::string* yaml : {&meta.config_yaml, &meta.trajectory_yaml}) {
      const size_t train = yaml->find("train:");
      const size_t at = yaml->find("  seed: ", train);
      const size_t eol = yaml->find('\n', at);
      yaml->replace(at, eol - at, "  seed: " + seed);
    }
  } else {
    fail("unknown attack {}", attack);
  }
  rechain_and_sign(meta, t, key);
  write_log_file(file, meta, t, log.superseded);
  fmt::print("{}: rewrote {} ({}) and signed it with key {}\n", attack, file.string(),
             t.steps.size(), key_id(key.public_key()));
  return 0;
}

}  // namespace
}  // namespace wit::witness

int main(int argc, char** argv) {
  try {
    return wit::witness::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "wit_test_dishonest: {}\n", e.what());
    return 1;
  }
}
