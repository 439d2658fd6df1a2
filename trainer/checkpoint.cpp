// Checkpoints as tensors (trainer/checkpoint.h).
#include "trainer/checkpoint.h"

#include <fstream>

#include "core/error.h"

namespace wit {

namespace {

void read_floats(std::ifstream& in, float* out, int64_t n, const std::filesystem::path& file) {
  in.read(reinterpret_cast<char*>(out), std::streamsize(n * 4));
  if (!in) fail("{}: truncated checkpoint payload", file.string());
}

}  // namespace

Digest state_hash(const Digest& genesis, int64_t step, const torch::Tensor& params,
                  const torch::Tensor& m, const torch::Tensor& v) {
  const int64_t n = params.numel();
  for (auto* t : {&params, &m, &v})
    WIT_CHECK(t->dtype() == torch::kFloat32 && t->is_contiguous() && t->numel() == n,
              "state tensors must be contiguous fp32 of {} elements", n);
  Sha256 h = state_hasher(genesis, step, n);
  for (auto* t : {&params, &m, &v}) h.update(t->data_ptr<float>(), size_t(n) * sizeof(float));
  return h.finish();
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

Checkpoint load_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  CheckpointLayout l = read_checkpoint_layout(in, file);
  in.seekg(std::streamoff(l.payload));
  const int64_t n = l.info.num_params;
  Checkpoint c;
  c.info = l.info;
  for (auto* t : {&c.params, &c.m, &c.v}) {
    *t = torch::empty({n}, torch::kFloat32);
    read_floats(in, t->data_ptr<float>(), n, file);
  }
  if (state_hash(c.info.genesis, c.info.step, c.params, c.m, c.v) != c.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", file.string());
  return c;
}

Checkpoint load_checkpoint_range(const std::filesystem::path& file, int64_t begin, int64_t count) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  CheckpointLayout l = read_checkpoint_layout(in, file);
  const int64_t n = l.info.num_params;
  const int64_t have = std::max<int64_t>(0, std::min(count, n - begin));
  Checkpoint c;
  c.info = l.info;
  int section = 0;
  for (auto* t : {&c.params, &c.m, &c.v}) {
    *t = torch::zeros({count}, torch::kFloat32);
    in.seekg(std::streamoff(l.payload + (uint64_t(section++) * n + begin) * 4));
    if (have > 0) read_floats(in, t->data_ptr<float>(), have, file);
  }
  return c;
}

}  // namespace wit
