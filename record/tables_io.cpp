#include "record/tables_io.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/error.h"

namespace wit::witness::io {

namespace {

constexpr size_t kStepChunk = 1024;  // rows per chunk: ~200 KB of the steps table
constexpr size_t kSideChunk = 64;

template <size_t N>
std::vector<uint8_t> flatten(const std::vector<std::array<uint8_t, N>>& rows) {
  std::vector<uint8_t> out(rows.size() * N);
  for (size_t i = 0; i < rows.size(); ++i) std::memcpy(out.data() + i * N, rows[i].data(), N);
  return out;
}

template <size_t N>
void append_bytes(h5::Dataset& d, const std::vector<std::array<uint8_t, N>>& rows) {
  auto flat = flatten(rows);
  d.append_rows<uint8_t>(flat.data(), rows.size(), N);
}

template <typename Row, typename T, typename Get>
std::vector<T> column(const std::vector<Row>& rows, Get get) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(get(r));
  return out;
}

// Reading: every column whole, then the rows all columns have.
struct ColumnReader {
  const h5::Group& root;
  std::string prefix, table;
  std::vector<std::pair<std::string, uint64_t>> lengths;

  h5::Dataset open(const std::string& name) {
    const std::string path = prefix + table + "/" + name;
    if (!root.exists(path))
      fail("{}: /{} is missing: this is not a complete witness log", root.file_path(), path);
    h5::Dataset d = root.open_dataset(path);
    lengths.emplace_back(name, d.rows());
    return d;
  }
  template <typename T>
  std::vector<T> values(const std::string& name) {
    return open(name).read<T>();
  }
  template <size_t N>
  std::vector<std::array<uint8_t, N>> bytes(const std::string& name) {
    h5::Dataset d = open(name);
    auto flat = d.read_matrix_rows<uint8_t>(0, d.rows(), N);
    std::vector<std::array<uint8_t, N>> out(d.rows());
    for (size_t i = 0; i < out.size(); ++i) std::memcpy(out[i].data(), flat.data() + i * N, N);
    return out;
  }
  // A fixed-width name column as stored, less its trailing NULs: any other byte stays, so that
  // the row hash (over the stored bytes) sees it.
  std::vector<std::string> names(const std::string& name) {
    std::vector<std::string> out = open(name).read_fixed_string_bytes(kNameChars);
    for (auto& v : out)
      while (!v.empty() && v.back() == '\0') v.pop_back();
    return out;
  }
  // Rows every column has; a shorter column makes the rows past it incomplete.
  uint64_t complete_rows(std::vector<Finding>& incomplete) const {
    if (lengths.empty()) return 0;
    auto shorter = [](auto& a, auto& b) { return a.second < b.second; };
    auto lo = std::min_element(lengths.begin(), lengths.end(), shorter);
    auto hi = std::max_element(lengths.begin(), lengths.end(), shorter);
    if (lo->second != hi->second)
      incomplete.push_back({prefix + table, int64_t(lo->second), lo->first,
                            fmt::format("column {} has {} rows but {} has {}: rows from {} on are "
                                        "incomplete and were not read",
                                        lo->first, lo->second, hi->first, hi->second, lo->second)});
    return lo->second;
  }
};

// Every column: where it lives, its type and shape, and which handle holds it.
enum class Kind { U64, F32, F64, Digest, Fingerprint, Signature, Probe, Name };

struct ColumnSpec {
  h5::Dataset TableColumns::*member;
  const char* path;  // below the prefix
  Kind kind;
  size_t chunk;
};

const std::vector<ColumnSpec>& column_specs() {
  using C = TableColumns;
  static const std::vector<ColumnSpec> specs = {
      {&C::step, "steps/step", Kind::U64, kStepChunk},
      {&C::tokens, "steps/tokens", Kind::U64, kStepChunk},
      {&C::lr, "steps/lr", Kind::F32, kStepChunk},
      {&C::weight_decay, "steps/weight_decay", Kind::F32, kStepChunk},
      {&C::beta1, "steps/beta1", Kind::F32, kStepChunk},
      {&C::beta2, "steps/beta2", Kind::F32, kStepChunk},
      {&C::eps, "steps/eps", Kind::F32, kStepChunk},
      {&C::grad_clip, "steps/grad_clip", Kind::F32, kStepChunk},
      {&C::loss, "steps/loss", Kind::F32, kStepChunk},
      {&C::grad_norm, "steps/grad_norm", Kind::F32, kStepChunk},
      {&C::clip_factor, "steps/clip_factor", Kind::F32, kStepChunk},
      {&C::batch_hash, "steps/batch_hash", Kind::Digest, kStepChunk},
      {&C::rng_commitment, "steps/rng_commitment", Kind::Digest, kStepChunk},
      {&C::weight_fingerprint, "steps/weight_fingerprint", Kind::Fingerprint, kStepChunk},
      {&C::prev_hash, "steps/prev_hash", Kind::Digest, kStepChunk},
      {&C::record_hash, "steps/record_hash", Kind::Digest, kStepChunk},
      {&C::wall_time, "steps/wall_time", Kind::F64, kStepChunk},
      {&C::step_seconds, "steps/step_seconds", Kind::F64, kStepChunk},
      {&C::fp_step, "fingerprints/step", Kind::U64, kSideChunk},
      {&C::fp_mean_logprob, "fingerprints/mean_logprob", Kind::Probe, kSideChunk},
      {&C::fp_argmax_digest, "fingerprints/argmax_digest", Kind::Digest, kSideChunk},
      {&C::fp_anchor, "fingerprints/anchor", Kind::Digest, kSideChunk},
      {&C::fp_prev, "fingerprints/prev_hash", Kind::Digest, kSideChunk},
      {&C::fp_hash, "fingerprints/row_hash", Kind::Digest, kSideChunk},
      {&C::ck_step, "checkpoints/step", Kind::U64, kSideChunk},
      {&C::ck_state_hash, "checkpoints/state_hash", Kind::Digest, kSideChunk},
      {&C::ck_anchor, "checkpoints/anchor", Kind::Digest, kSideChunk},
      {&C::ck_prev, "checkpoints/prev_hash", Kind::Digest, kSideChunk},
      {&C::ck_hash, "checkpoints/row_hash", Kind::Digest, kSideChunk},
      {&C::ev_step, "evals/step", Kind::U64, kSideChunk},
      {&C::ev_split, "evals/split", Kind::Name, kSideChunk},
      {&C::ev_metric, "evals/metric", Kind::Name, kSideChunk},
      {&C::ev_value, "evals/value", Kind::F32, kSideChunk},
      {&C::ev_anchor, "evals/anchor", Kind::Digest, kSideChunk},
      {&C::ev_prev, "evals/prev_hash", Kind::Digest, kSideChunk},
      {&C::ev_hash, "evals/row_hash", Kind::Digest, kSideChunk},
      {&C::sg_steps, "signatures/steps", Kind::U64, kSideChunk},
      {&C::sg_fingerprints, "signatures/fingerprints", Kind::U64, kSideChunk},
      {&C::sg_checkpoints, "signatures/checkpoints", Kind::U64, kSideChunk},
      {&C::sg_evals, "signatures/evals", Kind::U64, kSideChunk},
      {&C::sg_head, "signatures/head", Kind::Digest, kSideChunk},
      {&C::sg_public_key, "signatures/public_key", Kind::Digest, kSideChunk},
      {&C::sg_signature, "signatures/signature", Kind::Signature, kSideChunk},
      {&C::sg_wall_time, "signatures/wall_time", Kind::F64, kSideChunk},
  };
  return specs;
}

h5::Dataset create_column(h5::Group& root, const std::string& path, Kind kind, size_t chunk,
                          uint64_t fingerprint_width) {
  switch (kind) {
    case Kind::U64:
      return root.create_series<uint64_t>(path, chunk);
    case Kind::F32:
      return root.create_series<float>(path, chunk);
    case Kind::F64:
      return root.create_series<double>(path, chunk);
    case Kind::Digest:
      return root.create_digest_series(path, chunk);
    case Kind::Fingerprint:
      return root.create_matrix_series<uint8_t>(path, sizeof(Fingerprint), chunk);
    case Kind::Signature:
      return root.create_matrix_series<uint8_t>(path, sizeof(Signature), chunk);
    case Kind::Probe:
      return root.create_matrix_series<float>(path, std::max<uint64_t>(fingerprint_width, 1), chunk);
    case Kind::Name:
      return root.create_fixed_string_series(path, kNameChars, chunk);
  }
  fail("internal: unknown column kind");
}

}  // namespace

TableColumns create_tables(h5::Group& root, const std::string& prefix, uint64_t fingerprint_width) {
  TableColumns c;
  c.fingerprint_width = fingerprint_width;
  for (auto& spec : column_specs())
    c.*spec.member = create_column(root, prefix + spec.path, spec.kind, spec.chunk, fingerprint_width);
  return c;
}

TableColumns open_tables(h5::Group& root, const std::string& prefix) {
  TableColumns c;
  for (auto& spec : column_specs()) c.*spec.member = root.open_dataset(prefix + spec.path);
  c.fingerprint_width = c.fp_mean_logprob.width();
  return c;
}

void append_steps(TableColumns& c, const std::vector<StepRow>& r) {
  if (r.empty()) return;
  auto f32 = [&](h5::Dataset& d, float StepFields::*m) {
    d.append(column<StepRow, float>(r, [m](const StepRow& x) { return x.fields.*m; }));
  };
  c.step.append(column<StepRow, uint64_t>(r, [](auto& x) { return x.fields.step; }));
  c.tokens.append(column<StepRow, uint64_t>(r, [](auto& x) { return x.fields.tokens; }));
  f32(c.lr, &StepFields::lr);
  f32(c.weight_decay, &StepFields::weight_decay);
  f32(c.beta1, &StepFields::beta1);
  f32(c.beta2, &StepFields::beta2);
  f32(c.eps, &StepFields::eps);
  f32(c.grad_clip, &StepFields::grad_clip);
  f32(c.loss, &StepFields::loss);
  f32(c.grad_norm, &StepFields::grad_norm);
  f32(c.clip_factor, &StepFields::clip_factor);
  append_bytes(c.batch_hash,
               column<StepRow, Digest>(r, [](auto& x) { return x.fields.batch_hash; }));
  append_bytes(c.rng_commitment,
               column<StepRow, Digest>(r, [](auto& x) { return x.fields.rng_commitment; }));
  append_bytes(c.weight_fingerprint, column<StepRow, Fingerprint>(
                                         r, [](auto& x) { return x.fields.weight_fingerprint; }));
  append_bytes(c.prev_hash, column<StepRow, Digest>(r, [](auto& x) { return x.prev; }));
  // The record hash goes last: a reader that sees it sees a complete row.
  c.wall_time.append(column<StepRow, double>(r, [](auto& x) { return x.timing.wall_time; }));
  c.step_seconds.append(column<StepRow, double>(r, [](auto& x) { return x.timing.seconds; }));
  append_bytes(c.record_hash, column<StepRow, Digest>(r, [](auto& x) { return x.hash; }));
}

void append_fingerprints(TableColumns& c, const std::vector<FingerprintRow>& r) {
  if (r.empty()) return;
  const uint64_t w = c.fingerprint_width;
  std::vector<float> lp;
  for (auto& x : r) {
    if (x.fields.mean_logprob.size() != w)
      fail("{}: a fingerprint of {} probe sequences does not fit its table ({} per row)",
           c.fp_mean_logprob.where(), x.fields.mean_logprob.size(), w);
    lp.insert(lp.end(), x.fields.mean_logprob.begin(), x.fields.mean_logprob.end());
  }
  c.fp_step.append(column<FingerprintRow, uint64_t>(r, [](auto& x) { return x.fields.step; }));
  c.fp_mean_logprob.append_rows<float>(lp.data(), r.size(), w);
  append_bytes(c.fp_argmax_digest,
               column<FingerprintRow, Digest>(r, [](auto& x) { return x.fields.argmax_digest; }));
  append_bytes(c.fp_anchor, column<FingerprintRow, Digest>(r, [](auto& x) { return x.anchor; }));
  append_bytes(c.fp_prev, column<FingerprintRow, Digest>(r, [](auto& x) { return x.prev; }));
  append_bytes(c.fp_hash, column<FingerprintRow, Digest>(r, [](auto& x) { return x.hash; }));
}

void append_checkpoints(TableColumns& c, const std::vector<CheckpointRow>& r) {
  if (r.empty()) return;
  c.ck_step.append(column<CheckpointRow, uint64_t>(r, [](auto& x) { return x.fields.step; }));
  append_bytes(c.ck_state_hash,
               column<CheckpointRow, Digest>(r, [](auto& x) { return x.fields.state_hash; }));
  append_bytes(c.ck_anchor, column<CheckpointRow, Digest>(r, [](auto& x) { return x.anchor; }));
  append_bytes(c.ck_prev, column<CheckpointRow, Digest>(r, [](auto& x) { return x.prev; }));
  append_bytes(c.ck_hash, column<CheckpointRow, Digest>(r, [](auto& x) { return x.hash; }));
}

void append_evals(TableColumns& c, const std::vector<EvalRow>& r) {
  if (r.empty()) return;
  c.ev_step.append(column<EvalRow, uint64_t>(r, [](auto& x) { return x.fields.step; }));
  c.ev_split.append_fixed_strings(
      column<EvalRow, std::string>(r, [](auto& x) { return x.fields.split; }));
  c.ev_metric.append_fixed_strings(
      column<EvalRow, std::string>(r, [](auto& x) { return x.fields.metric; }));
  c.ev_value.append(column<EvalRow, float>(r, [](auto& x) { return x.fields.value; }));
  append_bytes(c.ev_anchor, column<EvalRow, Digest>(r, [](auto& x) { return x.anchor; }));
  append_bytes(c.ev_prev, column<EvalRow, Digest>(r, [](auto& x) { return x.prev; }));
  append_bytes(c.ev_hash, column<EvalRow, Digest>(r, [](auto& x) { return x.hash; }));
}

void append_signatures(TableColumns& c, const std::vector<SignatureRow>& r) {
  if (r.empty()) return;
  c.sg_steps.append(column<SignatureRow, uint64_t>(r, [](auto& x) { return x.heads.steps; }));
  c.sg_fingerprints.append(column<SignatureRow, uint64_t>(r, [](auto& x) { return x.heads.fingerprints; }));
  c.sg_checkpoints.append(
      column<SignatureRow, uint64_t>(r, [](auto& x) { return x.heads.checkpoints; }));
  c.sg_evals.append(column<SignatureRow, uint64_t>(r, [](auto& x) { return x.heads.evals; }));
  append_bytes(c.sg_head, column<SignatureRow, Digest>(r, [](auto& x) { return x.head; }));
  append_bytes(c.sg_public_key,
               column<SignatureRow, PublicKey>(r, [](auto& x) { return x.public_key; }));
  c.sg_wall_time.append(column<SignatureRow, double>(r, [](auto& x) { return x.wall_time; }));
  append_bytes(c.sg_signature,
               column<SignatureRow, Signature>(r, [](auto& x) { return x.signature; }));
}

void append_all(TableColumns& c, const Tables& t) {
  append_steps(c, t.steps);
  append_fingerprints(c, t.fingerprints);
  append_checkpoints(c, t.checkpoints);
  append_evals(c, t.evals);
  append_signatures(c, t.signatures);
}

Tables read_tables(const h5::Group& root, const std::string& p, std::vector<Finding>& incomplete) {
  Tables t;
  {
    ColumnReader r{root, p, "steps", {}};
    auto step = r.values<uint64_t>("step");
    auto tokens = r.values<uint64_t>("tokens");
    std::vector<std::vector<float>> f;
    for (const char* name : {"lr", "weight_decay", "beta1", "beta2", "eps", "grad_clip", "loss",
                             "grad_norm", "clip_factor"})
      f.push_back(r.values<float>(name));
    auto batch = r.bytes<32>("batch_hash");
    auto rng = r.bytes<32>("rng_commitment");
    auto wfp = r.bytes<sizeof(Fingerprint)>("weight_fingerprint");
    auto prev = r.bytes<32>("prev_hash");
    auto hash = r.bytes<32>("record_hash");
    auto wall = r.values<double>("wall_time");
    auto secs = r.values<double>("step_seconds");
    const uint64_t n = r.complete_rows(incomplete);
    t.steps.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      auto& x = t.steps[i];
      x.fields = {step[i], tokens[i], f[0][i], f[1][i], f[2][i],  f[3][i], f[4][i],
                  f[5][i], f[6][i],   f[7][i], f[8][i], batch[i], rng[i],  wfp[i]};
      x.timing = {wall[i], secs[i]};
      x.prev = prev[i];
      x.hash = hash[i];
    }
  }
  {
    ColumnReader r{root, p, "fingerprints", {}};
    auto step = r.values<uint64_t>("step");
    h5::Dataset lp_set = r.open("mean_logprob");
    const uint64_t w = lp_set.width();
    auto lp = lp_set.read_matrix_rows<float>(0, lp_set.rows(), w);
    auto argmax = r.bytes<32>("argmax_digest");
    auto anchor = r.bytes<32>("anchor");
    auto prev = r.bytes<32>("prev_hash");
    auto hash = r.bytes<32>("row_hash");
    const uint64_t n = r.complete_rows(incomplete);
    t.fingerprints.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      auto& x = t.fingerprints[i];
      x.fields.step = step[i];
      x.fields.mean_logprob.assign(lp.begin() + long(i * w), lp.begin() + long((i + 1) * w));
      x.fields.argmax_digest = argmax[i];
      x.anchor = anchor[i];
      x.prev = prev[i];
      x.hash = hash[i];
    }
  }
  {
    ColumnReader r{root, p, "checkpoints", {}};
    auto step = r.values<uint64_t>("step");
    auto state = r.bytes<32>("state_hash");
    auto anchor = r.bytes<32>("anchor");
    auto prev = r.bytes<32>("prev_hash");
    auto hash = r.bytes<32>("row_hash");
    const uint64_t n = r.complete_rows(incomplete);
    t.checkpoints.resize(n);
    for (uint64_t i = 0; i < n; ++i)
      t.checkpoints[i] = {{step[i], state[i]}, anchor[i], prev[i], hash[i]};
  }
  {
    ColumnReader r{root, p, "evals", {}};
    auto step = r.values<uint64_t>("step");
    auto split = r.names("split");
    auto metric = r.names("metric");
    auto value = r.values<float>("value");
    auto anchor = r.bytes<32>("anchor");
    auto prev = r.bytes<32>("prev_hash");
    auto hash = r.bytes<32>("row_hash");
    const uint64_t n = r.complete_rows(incomplete);
    t.evals.resize(n);
    for (uint64_t i = 0; i < n; ++i)
      t.evals[i] = {{step[i], split[i], metric[i], value[i]}, anchor[i], prev[i], hash[i]};
  }
  {
    ColumnReader r{root, p, "signatures", {}};
    auto steps = r.values<uint64_t>("steps");
    auto fingerprints = r.values<uint64_t>("fingerprints");
    auto ckpts = r.values<uint64_t>("checkpoints");
    auto evals = r.values<uint64_t>("evals");
    auto head = r.bytes<32>("head");
    auto key = r.bytes<32>("public_key");
    auto sig = r.bytes<64>("signature");
    auto wall = r.values<double>("wall_time");
    const uint64_t n = r.complete_rows(incomplete);
    t.signatures.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      auto& x = t.signatures[i];
      x.heads.steps = steps[i];
      x.heads.fingerprints = fingerprints[i];
      x.heads.checkpoints = ckpts[i];
      x.heads.evals = evals[i];
      x.head = head[i];
      x.public_key = key[i];
      x.signature = sig[i];
      x.wall_time = wall[i];
    }
  }
  return t;
}

const std::vector<std::string>& meta_attributes() {
  static const std::vector<std::string> names = {
      "committed_yaml", "manifest_root", "data_layout", "num_params",
      "public_key",     "genesis",       "sessions_json", "created"};
  return names;
}

const std::vector<std::string>& table_columns(const std::string& table) {
  static const std::map<std::string, std::vector<std::string>> by_table = [] {
    std::map<std::string, std::vector<std::string>> m;
    for (auto& spec : column_specs()) {
      const std::string path = spec.path;
      m[path.substr(0, path.find('/'))].push_back(path.substr(path.find('/') + 1));
    }
    return m;
  }();
  static const std::vector<std::string> none;
  auto it = by_table.find(table);
  return it == by_table.end() ? none : it->second;
}

void write_meta(h5::File& f, const RunMeta& m) {
  f.set_string_attr("format", kFormatName);
  f.set_int_attr("schema_version", kSchemaVersion);
  h5::Group g = f.create_group("meta");
  g.set_string_attr("committed_yaml", m.committed_yaml);
  g.set_string_attr("manifest_root", to_hex(m.manifest_root));
  g.set_string_attr("data_layout", to_hex(m.data_layout));
  g.set_uint_attr("num_params", m.num_params);
  g.set_string_attr("public_key", to_hex(m.public_key.data(), m.public_key.size()));
  g.set_string_attr("genesis", to_hex(m.genesis()));
  g.set_string_attr("sessions_json", m.sessions_json);
  g.set_string_attr("created", m.created);
}

RunMeta read_meta(const h5::File& f, Digest& stored_genesis) {
  const std::string file = f.path().string();
  if (!f.exists("meta")) fail("{}: /meta is missing: this is not a complete witness log", file);
  h5::Group g = f.open_group("meta");
  RunMeta m;
  m.committed_yaml = g.string_attr("committed_yaml");
  m.manifest_root = digest_from_hex(g.string_attr("manifest_root"), file + ":/meta manifest_root");
  m.data_layout = digest_from_hex(g.string_attr("data_layout"), file + ":/meta data_layout");
  stored_genesis = digest_from_hex(g.string_attr("genesis"), file + ":/meta genesis");
  m.num_params = g.uint_attr("num_params");
  const Digest key = digest_from_hex(g.string_attr("public_key"), file + ":/meta public_key");
  std::copy(key.begin(), key.end(), m.public_key.begin());
  m.sessions_json = g.string_attr("sessions_json");
  m.created = g.string_attr("created");
  return m;
}

}  // namespace wit::witness::io
