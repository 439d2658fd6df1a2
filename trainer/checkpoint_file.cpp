// Checkpoint files (trainer/checkpoint_file.h): format, checks, streaming writer.
#include "trainer/checkpoint_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "witness/log/format.h"

namespace wit {

namespace {

constexpr char kMagic[8] = {'W', 'I', 'T', 'C', 'K', 'P', 'T', '1'};
constexpr char kEnd[8] = {'W', 'I', 'T', 'C', 'K', 'E', 'N', 'D'};
constexpr uint64_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 32;
constexpr uint64_t kTrailerBytes = 32 + 8;


// Checks the header's fields and the file's size; `size` is the file's length.
CheckpointLayout parse_header(const char* h, uint64_t size, const std::string& file) {
  if (size < kHeaderBytes || std::memcmp(h, kMagic, 8) != 0)
    fail("{} is not a wit checkpoint (bad magic)", file);
  uint32_t version = 0, reserved = 0;
  uint64_t step = 0, n = 0;
  std::memcpy(&version, h + 8, 4);
  std::memcpy(&reserved, h + 12, 4);
  std::memcpy(&step, h + 16, 8);
  std::memcpy(&n, h + 24, 8);
  if (version != kCheckpointVersion)
    fail("{}: checkpoint version {} is not supported (this build reads version {})", file, version,
         kCheckpointVersion);
  // Bytes outside the hash are constants: the magic, the version, this zero and the end marker.
  if (reserved != 0) fail("{}: corrupt checkpoint header (reserved field {})", file, reserved);
  // Sizes are checked before any arithmetic can overflow.
  if (step > (uint64_t(1) << 62) || n == 0 || n > (uint64_t(1) << 40))
    fail("{}: corrupt checkpoint header (step {}, {} parameters)", file, step, n);
  CheckpointLayout l;
  l.payload = kHeaderBytes;
  l.info.step = int64_t(step);
  l.info.num_params = int64_t(n);
  std::memcpy(l.info.genesis.data(), h + 32, 32);
  const uint64_t expect = kHeaderBytes + 3 * n * 4 + kTrailerBytes;
  if (size != expect)
    fail("{}: checkpoint is {} bytes, expected {} for {} parameters (truncated or corrupt)", file,
         size, expect, n);
  return l;
}

void check_trailer(const char* t, CheckpointInfo& info, const std::string& file) {
  std::memcpy(info.state_hash.data(), t, 32);
  if (std::memcmp(t + 32, kEnd, 8) != 0)
    fail("{}: checkpoint has no end marker (truncated or corrupt)", file);
}



}  // namespace

CheckpointLayout read_checkpoint_layout(std::ifstream& in, const std::filesystem::path& file) {
  char header[kHeaderBytes] = {};
  in.read(header, kHeaderBytes);
  if (!in) fail("{} is not a wit checkpoint (bad magic)", file.string());
  CheckpointLayout l = parse_header(header, std::filesystem::file_size(file), file.string());
  char trailer[kTrailerBytes];
  in.seekg(std::streamoff(std::filesystem::file_size(file) - kTrailerBytes));
  in.read(trailer, kTrailerBytes);
  if (!in) fail("{}: checkpoint has no end marker (truncated or corrupt)", file.string());
  check_trailer(trailer, l.info, file.string());
  return l;
}

Sha256 state_hasher(const Digest& genesis, int64_t step, int64_t n) {
  Sha256 h;
  h.update("wit-state-v2").update(genesis.data(), genesis.size());
  h.update_u64(uint64_t(step)).update_u64(uint64_t(n));
  return h;
}


std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir, int64_t step) {
  return run_dir / witness::checkpoint_file_name(uint64_t(step));
}

// ---------------------------------------------------------------------------------------------
// Writing

CheckpointWriter::CheckpointWriter(std::filesystem::path file, const CheckpointInfo& info)
    : file_(std::move(file)), hash_(state_hasher(info.genesis, info.step, info.num_params)) {
  expected_ = 3 * info.num_params;
  std::filesystem::create_directories(file_.parent_path());
  tmp_ = file_;
  tmp_ += ".tmp." + std::to_string(::getpid());
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) fail("cannot create {}: {}", tmp_.string(), std::strerror(errno));
  const uint32_t version = kCheckpointVersion, reserved = 0;
  const uint64_t step = uint64_t(info.step), n = uint64_t(info.num_params);
  write_all(f_, kMagic, 8, file_);
  write_all(f_, &version, 4, file_);
  write_all(f_, &reserved, 4, file_);
  write_all(f_, &step, 8, file_);
  write_all(f_, &n, 8, file_);
  write_all(f_, info.genesis.data(), 32, file_);
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


// ---------------------------------------------------------------------------------------------
// Reading

CheckpointInfo read_checkpoint_info(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  return read_checkpoint_layout(in, file).info;
}



void verify_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  CheckpointLayout l = read_checkpoint_layout(in, file);
  in.seekg(std::streamoff(l.payload));
  Sha256 h = state_hasher(l.info.genesis, l.info.step, l.info.num_params);
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

CheckpointInfo parse_checkpoint(const std::string& bytes, const std::string& where) {
  if (bytes.size() < kHeaderBytes + kTrailerBytes)
    fail("{} is not a wit checkpoint (bad magic)", where);
  CheckpointLayout l = parse_header(bytes.data(), bytes.size(), where);
  check_trailer(bytes.data() + bytes.size() - kTrailerBytes, l.info, where);
  Sha256 h = state_hasher(l.info.genesis, l.info.step, l.info.num_params);
  h.update(bytes.data() + kHeaderBytes, 3 * size_t(l.info.num_params) * 4);
  if (h.finish() != l.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", where);
  return l.info;
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
