#include "trainer/checkpoint.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "core/fs.h"
#include "witness/log/format.h"

namespace wit {

namespace {

constexpr char kMagic[8] = {'W', 'I', 'T', 'C', 'K', 'P', 'T', '1'};
constexpr char kEnd[8] = {'W', 'I', 'T', 'C', 'K', 'E', 'N', 'D'};
constexpr uint64_t kTrailerBytes = 32 + 8;

struct Layout {
  CheckpointInfo info;
  uint64_t payload = 0;  // offset of params
};

// Reads and checks the header and the trailer (not the payload's hash).
Layout read_layout(std::ifstream& in, const std::filesystem::path& file) {
  char magic[8];
  uint32_t version = 0, reserved = 0;
  uint64_t header_len = 0;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&version), 4);
  in.read(reinterpret_cast<char*>(&reserved), 4);
  in.read(reinterpret_cast<char*>(&header_len), 8);
  if (!in || std::memcmp(magic, kMagic, 8) != 0)
    fail("{} is not a wit checkpoint (bad magic)", file.string());
  if (version != kCheckpointVersion)
    fail("{}: checkpoint version {} is not supported (this build reads version {})", file.string(),
         version, kCheckpointVersion);
  if (header_len > (1u << 30)) fail("{}: corrupt checkpoint header length", file.string());
  std::string text(header_len, '\0');
  in.read(text.data(), std::streamsize(header_len));
  if (!in) fail("{}: truncated checkpoint header", file.string());
  Layout l;
  try {
    auto j = nlohmann::json::parse(text);
    l.info.step = j.at("step").get<int64_t>();
    l.info.num_params = j.at("num_params").get<int64_t>();
    l.info.config_yaml = j.at("config").get<std::string>();
    l.info.manifest_root =
        digest_from_hex(j.at("manifest_root").get<std::string>(), "manifest_root");
  } catch (const nlohmann::json::exception& e) {
    fail("{}: corrupt checkpoint header: {}", file.string(), e.what());
  }
  l.payload = 24 + header_len;
  const uint64_t expect = l.payload + 3 * uint64_t(l.info.num_params) * 4 + kTrailerBytes;
  const uint64_t actual = std::filesystem::file_size(file);
  if (actual != expect)
    fail("{}: checkpoint is {} bytes, expected {} for {} parameters (truncated or corrupt)",
         file.string(), actual, expect, l.info.num_params);
  char end[8];
  in.seekg(std::streamoff(actual - kTrailerBytes));
  in.read(reinterpret_cast<char*>(l.info.state_hash.data()), 32);
  in.read(end, 8);
  if (!in || std::memcmp(end, kEnd, 8) != 0)
    fail("{}: checkpoint has no end marker (truncated or corrupt)", file.string());
  return l;
}

void read_floats(std::ifstream& in, float* out, int64_t n, const std::filesystem::path& file) {
  in.read(reinterpret_cast<char*>(out), std::streamsize(n * 4));
  if (!in) fail("{}: truncated checkpoint payload", file.string());
}

}  // namespace

Sha256 state_hasher(int64_t step, int64_t n) {
  Sha256 h;
  h.update("wit-state-v1").update_u64(uint64_t(step)).update_u64(uint64_t(n));
  return h;
}

Digest state_hash(int64_t step, const torch::Tensor& params, const torch::Tensor& m,
                  const torch::Tensor& v) {
  const int64_t n = params.numel();
  for (auto* t : {&params, &m, &v})
    WIT_CHECK(t->dtype() == torch::kFloat32 && t->is_contiguous() && t->numel() == n,
              "state tensors must be contiguous fp32 of {} elements", n);
  Sha256 h = state_hasher(step, n);
  for (auto* t : {&params, &m, &v}) h.update(t->data_ptr<float>(), size_t(n) * sizeof(float));
  return h.finish();
}

std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir, int64_t step) {
  return run_dir / witness::checkpoint_file_name(uint64_t(step));
}

// ---------------------------------------------------------------------------------------------
// Writing

CheckpointWriter::CheckpointWriter(std::filesystem::path file, const CheckpointInfo& info)
    : file_(std::move(file)), hash_(state_hasher(info.step, info.num_params)) {
  expected_ = 3 * info.num_params;
  std::filesystem::create_directories(file_.parent_path());
  tmp_ = file_;
  tmp_ += ".tmp." + std::to_string(::getpid());
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) fail("cannot create {}: {}", tmp_.string(), std::strerror(errno));
  nlohmann::json j = {{"format", "wit-checkpoint"},
                      {"step", info.step},
                      {"num_params", info.num_params},
                      {"manifest_root", to_hex(info.manifest_root)},
                      {"config", info.config_yaml}};
  const std::string header = j.dump();
  const uint32_t version = kCheckpointVersion, reserved = 0;
  const uint64_t len = header.size();
  write_all(f_, kMagic, 8, file_);
  write_all(f_, &version, 4, file_);
  write_all(f_, &reserved, 4, file_);
  write_all(f_, &len, 8, file_);
  write_all(f_, header.data(), header.size(), file_);
}

CheckpointWriter::~CheckpointWriter() {
  if (!f_) return;
  std::fclose(f_);
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
}

void CheckpointWriter::write(const float* data, int64_t n) {
  WIT_CHECK(written_ + n <= expected_, "checkpoint payload overflow");
  write_all(f_, data, size_t(n) * 4, file_);
  hash_.update(data, size_t(n) * 4);
  written_ += n;
}

Digest CheckpointWriter::finish() {
  WIT_CHECK(written_ == expected_, "checkpoint has {} of {} values", written_, expected_);
  const Digest d = hash_.finish();
  write_all(f_, d.data(), d.size(), file_);
  write_all(f_, kEnd, 8, file_);
  if (std::fflush(f_) != 0 || ::fsync(::fileno(f_)) != 0 || std::fclose(f_) != 0) {
    f_ = nullptr;
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    fail("cannot write {}: {}", file_.string(), std::strerror(errno));
  }
  f_ = nullptr;
  std::error_code ec;
  std::filesystem::rename(tmp_, file_, ec);
  if (ec) {
    std::filesystem::remove(tmp_, ec);
    fail("cannot move {} into place: {}", file_.string(), ec.message());
  }
  return d;
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

// ---------------------------------------------------------------------------------------------
// Reading

CheckpointInfo read_checkpoint_info(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  return read_layout(in, file).info;
}

Checkpoint load_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  Layout l = read_layout(in, file);
  in.seekg(std::streamoff(l.payload));
  const int64_t n = l.info.num_params;
  Checkpoint c;
  c.info = l.info;
  for (auto* t : {&c.params, &c.m, &c.v}) {
    *t = torch::empty({n}, torch::kFloat32);
    read_floats(in, t->data_ptr<float>(), n, file);
  }
  if (state_hash(c.info.step, c.params, c.m, c.v) != c.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", file.string());
  return c;
}

Checkpoint load_checkpoint_range(const std::filesystem::path& file, int64_t begin, int64_t count) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  Layout l = read_layout(in, file);
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

void verify_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  Layout l = read_layout(in, file);
  in.seekg(std::streamoff(l.payload));
  Sha256 h = state_hasher(l.info.step, l.info.num_params);
  std::vector<char> buf(size_t(1) << 24);
  uint64_t left = 3 * uint64_t(l.info.num_params) * 4;
  while (left > 0) {
    const size_t n = size_t(std::min<uint64_t>(left, buf.size()));
    in.read(buf.data(), std::streamsize(n));
    if (!in) fail("{}: truncated checkpoint payload", file.string());
    h.update(buf.data(), n);
    left -= n;
  }
  if (h.finish() != l.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", file.string());
}

std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& run_dir) {
  const auto dir = run_dir / "checkpoints";
  if (!std::filesystem::is_directory(dir)) return std::nullopt;
  static const std::regex name(R"(step_(\d{8,})\.ckpt)");
  std::optional<std::filesystem::path> best;
  int64_t best_step = -1;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    std::smatch m;
    const std::string fname = e.path().filename().string();
    if (!std::regex_match(fname, m, name)) continue;
    const int64_t s = std::stoll(m[1]);
    if (s > best_step) best_step = s, best = e.path();
  }
  return best;
}

}  // namespace wit
