#include "record/format.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"

namespace wit::witness {

namespace {

Sha256& update_u32(Sha256& h, uint32_t v) {
  const uint8_t b[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
  return h.update(b, 4);
}

Sha256& update_float(Sha256& h, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return update_u32(h, bits);
}

Sha256& update_digest(Sha256& h, const Digest& d) { return h.update(d.data(), d.size()); }

// Strings go in length-prefixed, so that field boundaries cannot shift.
Sha256& update_string(Sha256& h, const std::string& s) {
  h.update_u64(s.size());
  return h.update(s);
}

// Side-table rows start alike: domain, previous row, anchor, step.
Sha256 side_row(const char* domain, const Digest& prev, const Digest& anchor, uint64_t step) {
  Sha256 h;
  h.update(domain);
  update_digest(h, prev);
  update_digest(h, anchor).update_u64(step);
  return h;
}

// A fixed-width name column as stored: the name, then NULs to kNameChars bytes.
Sha256& update_name(Sha256& h, const std::string& name) {
  if (name.size() > kNameChars)
    fail("the name '{}' is longer than the log's {} characters", name, kNameChars);
  std::string stored = name;
  stored.resize(kNameChars, '\0');
  return h.update(stored);
}

}  // namespace

std::string checkpoint_file_name(uint64_t step) {
  return fmt::format("checkpoints/step_{:08d}.ckpt", step);
}

Digest genesis_hash(const std::string& committed_yaml, const Digest& manifest_root,
                    const Digest& data_layout, uint64_t num_params, const PublicKey& key) {
  Sha256 h;
  h.update("wit-genesis-v2").update_u64(uint64_t(kSchemaVersion));
  update_string(h, committed_yaml);
  update_digest(h, manifest_root);
  update_digest(h, data_layout);
  h.update_u64(num_params);
  return h.update(key.data(), key.size()).finish();
}

Digest record_hash(const Digest& prev, const StepFields& f) {
  Sha256 h;
  h.update("wit-record-v1");
  update_digest(h, prev).update_u64(f.step).update_u64(f.tokens);
  for (float v : {f.lr, f.weight_decay, f.beta1, f.beta2, f.eps, f.grad_clip, f.loss, f.grad_norm,
                  f.clip_factor})
    update_float(h, v);
  update_digest(h, f.batch_hash);
  update_digest(h, f.rng_commitment);
  h.update(f.weight_fingerprint.data(), f.weight_fingerprint.size());
  return h.finish();
}

Digest micro_batch_hash(const uint16_t* tokens, size_t count) {
  Sha256 h;
  // Little-endian whatever the host, as the shards store them.
  uint8_t buf[4096];
  size_t i = 0;
  while (i < count) {
    const size_t n = std::min(count - i, sizeof buf / 2);
    for (size_t k = 0; k < n; ++k) {
      buf[2 * k] = uint8_t(tokens[i + k]);
      buf[2 * k + 1] = uint8_t(tokens[i + k] >> 8);
    }
    h.update(buf, 2 * n);
    i += n;
  }
  return h.finish();
}

Digest batch_hash(const std::vector<Digest>& micro_hashes) {
  Sha256 h;
  h.update("wit-batch-v1").update_u64(micro_hashes.size());
  for (auto& d : micro_hashes) update_digest(h, d);
  return h.finish();
}

Digest rng_commitment(const std::vector<uint64_t>& seeds) {
  Sha256 h;
  h.update("wit-rng-commit-v1").update_u64(seeds.size());
  for (uint64_t s : seeds) h.update_u64(s);
  return h.finish();
}

Digest seed_commitment(const char* name, uint64_t seed) {
  Sha256 h;
  h.update("wit-seed-v1");
  update_string(h, name);
  return h.update_u64(seed).finish();
}

Digest fingerprint_argmax_digest(const std::vector<uint16_t>& argmax) {
  return micro_batch_hash(argmax.data(), argmax.size());
}

Digest fingerprint_hash(const Digest& prev, const Digest& anchor, const FingerprintFields& f) {
  Sha256 h = side_row("wit-probe-v1", prev, anchor, f.step);
  h.update_u64(f.mean_logprob.size());
  for (float v : f.mean_logprob) update_float(h, v);
  return update_digest(h, f.argmax_digest).finish();
}

Digest checkpoint_hash(const Digest& prev, const Digest& anchor, const CheckpointFields& f) {
  Sha256 h = side_row("wit-checkpoint-v1", prev, anchor, f.step);
  return update_digest(h, f.state_hash).finish();
}

Digest eval_hash(const Digest& prev, const Digest& anchor, const EvalFields& f) {
  Sha256 h = side_row("wit-eval-v2", prev, anchor, f.step);
  update_name(h, f.split);
  update_name(h, f.metric);
  return update_float(h, f.value).finish();
}

Digest head_hash(const Heads& x) {
  Sha256 h;
  h.update("wit-head-v1");
  update_digest(h, x.genesis);
  update_digest(h.update_u64(x.steps), x.step_head);
  update_digest(h.update_u64(x.fingerprints), x.fingerprint_head);
  update_digest(h.update_u64(x.checkpoints), x.checkpoint_head);
  update_digest(h.update_u64(x.evals), x.eval_head);
  return h.finish();
}

std::string signed_message(const Digest& head) {
  return std::string("wit-signature-v1") + std::string(head.begin(), head.end());
}

}  // namespace wit::witness
