#include "trainer/checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "core/fs.h"

namespace wit {

namespace {

constexpr char kMagic[8] = {'W', 'I', 'T', 'C', 'K', 'P', 'T', '1'};

struct Header {
  CheckpointInfo info;
  uint64_t payload_offset = 0;
};

void check_state_tensor(const torch::Tensor& t, int64_t n, const char* what) {
  WIT_CHECK(t.defined() && t.dtype() == torch::kFloat32 && t.is_contiguous() && t.numel() == n,
            "checkpoint {} must be a contiguous fp32 tensor of {} elements", what, n);
}

Header read_header(std::ifstream& in, const std::filesystem::path& file) {
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
  Header h;
  try {
    auto j = nlohmann::json::parse(text);
    h.info.step = j.at("step").get<int64_t>();
    h.info.num_params = j.at("num_params").get<int64_t>();
    h.info.config_yaml = j.at("config").get<std::string>();
    h.info.manifest_root =
        digest_from_hex(j.at("manifest_root").get<std::string>(), "manifest_root");
    h.info.state_hash = digest_from_hex(j.at("state_sha256").get<std::string>(), "state_sha256");
  } catch (const nlohmann::json::exception& e) {
    fail("{}: corrupt checkpoint header: {}", file.string(), e.what());
  }
  h.payload_offset = 24 + header_len;
  return h;
}

}  // namespace

Digest state_hash(int64_t step, const torch::Tensor& params, const torch::Tensor& m,
                  const torch::Tensor& v) {
  const int64_t n = params.numel();
  check_state_tensor(params, n, "params");
  check_state_tensor(m, n, "m");
  check_state_tensor(v, n, "v");
  Sha256 h;
  h.update("wit-state-v1").update_u64(uint64_t(step)).update_u64(uint64_t(n));
  for (auto* t : {&params, &m, &v}) h.update(t->data_ptr<float>(), size_t(n) * sizeof(float));
  return h.finish();
}

std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir, int64_t step) {
  return run_dir / "checkpoints" / fmt::format("step_{:08d}.ckpt", step);
}

Digest save_checkpoint(const std::filesystem::path& file, const CheckpointInfo& info,
                       const torch::Tensor& params, const torch::Tensor& m,
                       const torch::Tensor& v) {
  const Digest hash = state_hash(info.step, params, m, v);
  nlohmann::json j = {{"format", "wit-checkpoint"},
                      {"step", info.step},
                      {"num_params", params.numel()},
                      {"state_sha256", to_hex(hash)},
                      {"manifest_root", to_hex(info.manifest_root)},
                      {"config", info.config_yaml}};
  const std::string header = j.dump();
  std::filesystem::create_directories(file.parent_path());
  write_file_atomic(file, [&](std::FILE* f) {
    const uint32_t version = kCheckpointVersion, reserved = 0;
    const uint64_t len = header.size();
    write_all(f, kMagic, 8, file);
    write_all(f, &version, 4, file);
    write_all(f, &reserved, 4, file);
    write_all(f, &len, 8, file);
    write_all(f, header.data(), header.size(), file);
    for (auto* t : {&params, &m, &v})
      write_all(f, t->data_ptr<float>(), size_t(t->numel()) * sizeof(float), file);
  });
  return hash;
}

CheckpointInfo read_checkpoint_info(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  return read_header(in, file).info;
}

Checkpoint load_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  Header h = read_header(in, file);
  const int64_t n = h.info.num_params;
  const uint64_t expect = h.payload_offset + 3 * uint64_t(n) * sizeof(float);
  const uint64_t actual = std::filesystem::file_size(file);
  if (actual != expect)
    fail("{}: checkpoint is {} bytes, expected {} for {} parameters (truncated or corrupt)",
         file.string(), actual, expect, n);
  Checkpoint c;
  c.info = h.info;
  for (auto* t : {&c.params, &c.m, &c.v}) {
    *t = torch::empty({n}, torch::kFloat32);
    in.read(reinterpret_cast<char*>(t->data_ptr<float>()), std::streamsize(n * sizeof(float)));
    if (!in) fail("{}: truncated checkpoint payload", file.string());
  }
  if (state_hash(c.info.step, c.params, c.m, c.v) != c.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", file.string());
  return c;
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
