// Checkpoints as tensors (trainer/checkpoint.h).
#include "trainer/checkpoint.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "core/error.h"

namespace wit {

namespace {

void read_floats(std::ifstream& in, float* out, int64_t n, const std::filesystem::path& file) {
  in.read(reinterpret_cast<char*>(out), std::streamsize(n * 4));
  if (!in) fail("{}: truncated checkpoint payload", file.string());
}

}  // namespace

int hashing_threads() { return int(std::clamp(std::thread::hardware_concurrency(), 1u, 16u)); }

Digest state_hash(const Digest& genesis, int64_t step, const torch::Tensor& params,
                  const torch::Tensor& m, const torch::Tensor& v, uint32_t version) {
  const int64_t n = params.numel();
  for (auto* t : {&params, &m, &v})
    WIT_CHECK(t->dtype() == torch::kFloat32 && t->is_contiguous() && t->numel() == n,
              "state tensors must be contiguous fp32 of {} elements", n);
  return state_hash_of(genesis, step, n, params.data_ptr<float>(), m.data_ptr<float>(),
                       v.data_ptr<float>(), version, hashing_threads());
}

Digest save_checkpoint(const std::filesystem::path& file, const CheckpointInfo& info,
                       const torch::Tensor& params, const torch::Tensor& m,
                       const torch::Tensor& v) {
  CheckpointInfo i = info;
  i.num_params = params.numel();
  CheckpointWriter w(file, i);
  for (auto* t : {&params, &m, &v}) {
    WIT_CHECK(t->is_contiguous() && t->numel() == i.num_params, "state tensor shape");
    w.write(t->data_ptr<float>(), t->numel());
  }
  return w.finish();
}

BackgroundCheckpoint::BackgroundCheckpoint(std::filesystem::path file, CheckpointInfo info,
                                           const HostState& state)
    : done_(std::async(std::launch::async, [file = std::move(file), info, state] {
        return save_checkpoint(file, info, state.params, state.m, state.v);
      })) {}

bool BackgroundCheckpoint::finished() const {
  return done_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

Digest BackgroundCheckpoint::wait() { return done_.get(); }

Checkpoint load_checkpoint(const std::filesystem::path& file) {
  std::ifstream in = open_checkpoint(file);
  CheckpointLayout l = read_checkpoint_layout(in, file);
  in.seekg(std::streamoff(l.payload));
  const int64_t n = l.info.num_params;
  Checkpoint c;
  c.info = l.info;
  for (auto* t : {&c.params, &c.m, &c.v}) {
    *t = torch::empty({n}, torch::kFloat32);
    read_floats(in, t->data_ptr<float>(), n, file);
  }
  if (state_hash(c.info.genesis, c.info.step, c.params, c.m, c.v, c.info.version) !=
      c.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", file.string());
  // The payload is whole; the leaf table, which partial readers trust, must be its table.
  if (l.info.version == 3) read_leaf_table(in, l, file);
  return c;
}

Checkpoint load_checkpoint_weights(const std::filesystem::path& file) {
  std::ifstream in = open_checkpoint(file);
  CheckpointLayout l = read_checkpoint_layout(in, file);
  if (l.info.version == 2) {
    Checkpoint c = load_checkpoint(file);
    c.m = c.v = torch::Tensor();
    return c;
  }
  const std::vector<Digest> table = read_leaf_table(in, l, file);
  const int64_t n = l.info.num_params;
  // The leaves covering params, read straight into the tensor; the last one may run into m,
  // and its rest is read beside it.
  const uint64_t bytes = uint64_t(n) * 4;
  const uint64_t leaf_bytes = checkpoint_leaf_bytes(n);
  const uint64_t leaves = (bytes + leaf_bytes - 1) / leaf_bytes;
  const uint64_t span = std::min(leaves * leaf_bytes, 3 * bytes);
  Checkpoint c;
  c.info = l.info;
  c.params = torch::empty({n}, torch::kFloat32);
  char* params = reinterpret_cast<char*>(c.params.data_ptr<float>());
  std::vector<char> tail(static_cast<size_t>(std::min(leaf_bytes, span)));
  in.seekg(std::streamoff(l.payload));
  in.read(params, std::streamsize(bytes));
  in.read(tail.data(), std::streamsize(span - bytes));
  if (!in) fail("{}: truncated checkpoint payload", file.string());
  std::vector<uint8_t> matches(static_cast<size_t>(leaves));
  at::parallel_for(0, int64_t(leaves), 1, [&](int64_t begin, int64_t end) {
    std::vector<char> last;
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t from = uint64_t(i) * leaf_bytes;
      const uint64_t len = std::min(leaf_bytes, span - from);
      const char* at = params + from;
      if (from + len > bytes) {  // the leaf that runs into m
        last.assign(params + from, params + bytes);
        last.insert(last.end(), tail.begin(), tail.begin() + std::ptrdiff_t(from + len - bytes));
        at = last.data();
      }
      matches[size_t(i)] = checkpoint_leaf_hash(at, len) == table[size_t(i)];
    }
  });
  for (uint64_t i = 0; i < leaves; ++i)
    if (!matches[size_t(i)])
      fail("{}: leaf {} of the weights does not match its leaf table entry (corrupt)",
           file.string(), i);
  return c;
}

Checkpoint load_checkpoint_range(const std::filesystem::path& file, int64_t begin, int64_t count,
                                 const Digest* expected) {
  std::ifstream in = open_checkpoint(file);
  CheckpointLayout l = read_checkpoint_layout(in, file);
  require_state(l.info, file, expected);
  const int64_t n = l.info.num_params;
  const int64_t have = std::max<int64_t>(0, std::min(count, n - begin));
  std::vector<Digest> table;  // version 3: every leaf the range touches is checked against it
  if (l.info.version == 3) table = read_leaf_table(in, l, file);
  const uint64_t total = 3 * uint64_t(n) * 4;
  const uint64_t leaf_bytes = checkpoint_leaf_bytes(n);
  std::vector<char> leaf(table.empty() ? 0 : size_t(leaf_bytes));
  Checkpoint c;
  c.info = l.info;
  int section = 0;
  for (auto* t : {&c.params, &c.m, &c.v}) {
    *t = torch::zeros({count}, torch::kFloat32);
    const uint64_t from = (uint64_t(section++) * uint64_t(n) + uint64_t(begin)) * 4;
    const uint64_t len = uint64_t(have) * 4;
    if (len == 0) continue;
    char* out = reinterpret_cast<char*>(t->data_ptr<float>());
    if (table.empty()) {
      in.seekg(std::streamoff(l.payload + from));
      read_floats(in, t->data_ptr<float>(), have, file);
      continue;  // version 2: checked whole below when a state is expected
    }
    for (uint64_t i = from / leaf_bytes; i * leaf_bytes < from + len; ++i) {
      const uint64_t at = i * leaf_bytes, size = std::min(leaf_bytes, total - at);
      in.seekg(std::streamoff(l.payload + at));
      in.read(leaf.data(), std::streamsize(size));
      if (!in) fail("{}: truncated checkpoint payload", file.string());
      if (checkpoint_leaf_hash(leaf.data(), size_t(size)) != table[size_t(i)])
        fail("{}: leaf {} (payload bytes {} to {}) does not match its leaf table entry (corrupt)",
             file.string(), i, at, at + size - 1);
      const uint64_t lo = std::max(at, from), hi = std::min(at + size, from + len);
      std::memcpy(out + (lo - from), leaf.data() + (lo - at), size_t(hi - lo));
    }
  }
  if (table.empty() && expected) {
    // Version 2 has no table: its one hash covers the whole payload, so this open streams it
    // all (a check in another open would not hold for this one's bytes).
    if (hash_payload(in, l, file).finish() != l.info.state_hash)
      fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", file.string());
  }
  return c;
}

}  // namespace wit
