#include "trainer/witnessing.h"

#include <fmt/format.h>
#include <openssl/opensslv.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/h5.h"

namespace wit {

namespace fs = std::filesystem;

witness::SigningKey training_key(const fs::path& explicit_key, bool quiet) {
  if (!explicit_key.empty()) return witness::SigningKey::load(explicit_key);
  const fs::path file = witness::default_key_path();
  if (fs::exists(file)) return witness::SigningKey::load(file);
  auto key = witness::SigningKey::generate();
  try {
    key.save(file);
  } catch (const Error&) {
    if (fs::exists(file)) return witness::SigningKey::load(file);  // another run made it first
    throw;
  }
  if (!fs::exists(file.string() + ".pub")) key.save_public(file.string() + ".pub");
  if (!quiet)
    fmt::print("created signing key {} (key id {}); it signs this machine's witness logs\n",
               file.string(), witness::key_id(key.public_key()));
  return key;
}

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line
                                        : line.substr(line.find_first_not_of(" ", colon + 1));
    }
  return "unknown";
}

std::string host_name() {
  char buf[256] = "";
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

std::string session_json(dist::Communicator& comm, const RunConfig& rc, const std::string& layout,
                         int64_t first_step, const Compute& compute) {
  // Every rank's host name, fixed width, gathered in rank order.
  constexpr size_t kWidth = 64;
  std::string mine = host_name();
  mine.resize(kWidth, '\0');
  std::string all(kWidth * size_t(comm.size()), '\0');
  comm.all_gather_bytes(mine.data(), kWidth, all.data());
  nlohmann::json hosts = nlohmann::json::array();
  for (int r = 0; r < comm.size(); ++r)
    hosts.push_back(all.substr(size_t(r) * kWidth, kWidth).c_str());

  nlohmann::json versions = {
      {"libtorch", TORCH_VERSION},
      {"hdf5", h5::library_version()},
      {"openssl", OPENSSL_VERSION_TEXT},
      {"compiler", fmt::format("g++ {}", __VERSION__)},
  };
  if (!comm.library_version().empty()) versions[comm.backend()] = comm.library_version();
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  nlohmann::json hardware = {
      {"cpu", cpu_model()},
      {"cores", std::thread::hardware_concurrency()},
      {"memory_bytes", int64_t(pages) * int64_t(page)},
      {"gpus", torch::cuda::is_available() ? torch::cuda::device_count() : 0},
  };
  nlohmann::json s = {
      {"first_step", first_step},
      {"world_size", comm.size()},
      {"backend", comm.backend()},
      {"dist_mode", rc.dist_mode},
      {"layout", layout},
      {"reduction", rc.dist_reduction == "canonical" ? "canonical-tree" : rc.dist_reduction},
      {"threads", rc.train.threads},
      {"activation_checkpointing", rc.train.activation_checkpointing},
      {"compute", device_facts(compute)},
      {"data_dir", rc.data.dir.string()},
      {"versions", versions},
      {"hardware", hardware},
      {"hosts", hosts},
      {"started", utc_now()},
  };
  return s.dump();
}

witness::RunMeta run_meta(const config::Config& cfg,
                          const data::Manifest& manifest, int64_t num_params,
                          const witness::PublicKey& key, const std::string& session) {
  witness::RunMeta m;
  m.committed_yaml = committed_yaml(cfg);
  m.manifest_root = manifest.root;
  m.data_layout = data::layout_digest(manifest);
  m.num_params = uint64_t(num_params);
  m.public_key = key;
  m.sessions_json = "[" + session + "]";
  m.created = utc_now();
  return m;
}

witness::StepFields step_fields(const StepRecord& r) {
  witness::StepFields f;
  f.step = uint64_t(r.step);
  f.tokens = uint64_t(r.tokens);
  f.lr = r.hyper.lr;
  f.weight_decay = r.hyper.weight_decay;
  f.beta1 = r.hyper.beta1;
  f.beta2 = r.hyper.beta2;
  f.eps = r.hyper.eps;
  f.grad_clip = r.hyper.grad_clip;
  f.loss = r.loss;
  f.grad_norm = r.grad_norm;
  f.clip_factor = r.clip_factor;
  f.batch_hash = r.batch_hash;
  f.rng_commitment = r.rng_commitment;
  f.weight_fingerprint = r.weight_fingerprint;
  return f;
}

}  // namespace wit
