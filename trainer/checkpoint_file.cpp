// Checkpoint files (trainer/checkpoint_file.h): format, checks, streaming writer.
#include "trainer/checkpoint_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "record/format.h"

namespace wit {

namespace {

constexpr char kMagic[8] = {'W', 'I', 'T', 'C', 'K', 'P', 'T', '1'};
constexpr char kEnd[8] = {'W', 'I', 'T', 'C', 'K', 'E', 'N', 'D'};
constexpr uint64_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 32;
constexpr uint64_t kTrailerBytes = 32 + 8;
constexpr char kLeafDomain[] = "wit-leaf-v3";


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
  if (version != 2 && version != 3)
    fail("{}: checkpoint version {} is not supported (this build reads versions 2 and 3)", file,
         version);
  // Bytes outside the hash are constants: the magic, the version, this zero and the end marker.
  if (reserved != 0) fail("{}: corrupt checkpoint header (reserved field {})", file, reserved);
  // Sizes are checked before any arithmetic can overflow.
  if (step > (uint64_t(1) << 62) || n == 0 || n > (uint64_t(1) << 40))
    fail("{}: corrupt checkpoint header (step {}, {} parameters)", file, step, n);
  CheckpointLayout l;
  l.payload = kHeaderBytes;
  l.info.step = int64_t(step);
  l.info.num_params = int64_t(n);
  l.info.version = version;
  std::memcpy(l.info.genesis.data(), h + 32, 32);
  l.table = kHeaderBytes + 3 * n * 4;
  l.leaves = version == 3 ? checkpoint_leaf_count(int64_t(n)) : 0;
  const uint64_t expect = l.table + 32 * l.leaves + kTrailerBytes;
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

Sha256 root_hasher(const Digest& genesis, int64_t step, int64_t n, uint32_t version) {
  Sha256 h;
  h.update(version == 3 ? "wit-state-v3" : "wit-state-v2").update(genesis.data(), genesis.size());
  h.update_u64(uint64_t(step)).update_u64(uint64_t(n));
  if (version == 3) h.update_u64(checkpoint_leaf_bytes(n));
  return h;
}

Digest root_of(const CheckpointInfo& info, const std::vector<Digest>& leaves) {
  Sha256 h = root_hasher(info.genesis, info.step, info.num_params, 3);
  for (const Digest& d : leaves) h.update(d.data(), d.size());
  return h.finish();
}

void read_at(std::ifstream& in, uint64_t offset, void* out, uint64_t n,
             const std::filesystem::path& file) {
  in.seekg(std::streamoff(offset));
  in.read(static_cast<char*>(out), std::streamsize(n));
  if (!in) fail("{}: truncated checkpoint", file.string());
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

Digest checkpoint_leaf_hash(const void* data, size_t n) {
  return Sha256().update(kLeafDomain).update(data, n).finish();
}

uint64_t checkpoint_leaf_bytes(int64_t num_params) {
  const uint64_t target = 24 * uint64_t(std::max<int64_t>(num_params, 0));
  uint64_t leaf = 4096;
  while (leaf < (1u << 20) && (2 * leaf) * (2 * leaf) <= target) leaf *= 2;
  return leaf;
}

uint64_t checkpoint_leaf_count(int64_t num_params) {
  const uint64_t leaf = checkpoint_leaf_bytes(num_params);
  return (3 * uint64_t(num_params) * 4 + leaf - 1) / leaf;
}

StateHasher::StateHasher(const Digest& genesis, int64_t step, int64_t n, uint32_t version)
    : version_(version),
      leaf_bytes_(checkpoint_leaf_bytes(n)),
      root_(root_hasher(genesis, step, n, version)) {
  WIT_CHECK(version == 2 || version == 3, "checkpoint version {}", version);
  if (version_ == 3) leaves_.reserve(size_t(checkpoint_leaf_count(n)));
}

StateHasher& StateHasher::update(const void* data, size_t bytes) {
  if (version_ == 2) {
    root_.update(data, bytes);
    return *this;
  }
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    if (!leaf_) leaf_.emplace().update(kLeafDomain);
    const size_t take = size_t(std::min<uint64_t>(bytes, leaf_bytes_ - in_leaf_));
    leaf_->update(p, take);
    p += take, bytes -= take, in_leaf_ += take;
    if (in_leaf_ == leaf_bytes_) {
      leaves_.push_back(leaf_->finish());
      root_.update(leaves_.back().data(), 32);
      leaf_.reset();
      in_leaf_ = 0;
    }
  }
  return *this;
}

Digest StateHasher::finish() {
  if (leaf_) {  // the last, shorter leaf
    leaves_.push_back(leaf_->finish());
    root_.update(leaves_.back().data(), 32);
    leaf_.reset();
  }
  return root_.finish();
}

Digest state_hash_of(const Digest& genesis, int64_t step, int64_t n, const float* params,
                     const float* m, const float* v, uint32_t version, int threads) {
  if (version == 2 || threads <= 1) {
    StateHasher h(genesis, step, n, version);
    for (const float* t : {params, m, v}) h.update(t, size_t(n) * 4);
    return h.finish();
  }
  // Leaf i is bytes [i·B, (i+1)·B) of params ‖ m ‖ v; a leaf across two sections is gathered.
  const uint64_t section = uint64_t(n) * 4, total = 3 * section, L = checkpoint_leaf_count(n);
  const uint64_t leaf_bytes = checkpoint_leaf_bytes(n);
  const char* sections[3] = {reinterpret_cast<const char*>(params),
                             reinterpret_cast<const char*>(m), reinterpret_cast<const char*>(v)};
  std::vector<Digest> leaves(static_cast<size_t>(L));
  auto hash_leaves = [&](uint64_t first, uint64_t end) {
    std::vector<char> gathered;
    for (uint64_t i = first; i < end; ++i) {
      const uint64_t begin = i * leaf_bytes;
      const uint64_t len = std::min(leaf_bytes, total - begin);
      const uint64_t s = begin / section, off = begin % section;
      if (off + len <= section) {
        leaves[size_t(i)] = checkpoint_leaf_hash(sections[s] + off, size_t(len));
        continue;
      }
      gathered.resize(size_t(len));
      uint64_t got = 0;
      for (uint64_t k = s, o = off; got < len; ++k, o = 0) {
        const uint64_t take = std::min(len - got, section - o);
        std::memcpy(gathered.data() + got, sections[k] + o, size_t(take));
        got += take;
      }
      leaves[size_t(i)] = checkpoint_leaf_hash(gathered.data(), size_t(len));
    }
  };
  const uint64_t T = std::min<uint64_t>(uint64_t(threads), L);
  std::vector<std::thread> pool;
  for (uint64_t t = 1; t < T; ++t) pool.emplace_back(hash_leaves, L * t / T, L * (t + 1) / T);
  hash_leaves(0, L / T);
  for (auto& th : pool) th.join();
  CheckpointInfo info;
  info.genesis = genesis, info.step = step, info.num_params = n;
  return root_of(info, leaves);
}


std::filesystem::path checkpoint_path(const std::filesystem::path& run_dir, int64_t step) {
  return run_dir / witness::checkpoint_file_name(uint64_t(step));
}

// ---------------------------------------------------------------------------------------------
// Writing

CheckpointWriter::CheckpointWriter(std::filesystem::path file, const CheckpointInfo& info)
    : file_(std::move(file)), hash_(info.genesis, info.step, info.num_params) {
  expected_ = 3 * info.num_params;
  std::filesystem::create_directories(file_.parent_path());
  tmp_ = file_;
  tmp_ += ".tmp." + std::to_string(::getpid());
  f_ = create_new_file(tmp_);
  const uint32_t version = kCheckpointVersion, reserved = 0;  // the writer writes version 3
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
  for (const Digest& leaf : hash_.leaves()) write_all(f_, leaf.data(), leaf.size(), file_);
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

std::ifstream open_checkpoint(const std::filesystem::path& file) {
  require_regular_file(file, "checkpoint");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open checkpoint {}", file.string());
  return in;
}

CheckpointInfo read_checkpoint_info(const std::filesystem::path& file) {
  std::ifstream in = open_checkpoint(file);
  return read_checkpoint_layout(in, file).info;
}



std::vector<Digest> read_leaf_table(std::ifstream& in, const CheckpointLayout& l,
                                    const std::filesystem::path& file) {
  if (l.info.version != 3)
    fail("{}: a version-{} checkpoint has no leaf table; it can only be checked whole",
         file.string(), l.info.version);
  std::vector<Digest> table(size_t(l.leaves));
  read_at(in, l.table, table.data(), 32 * l.leaves, file);
  if (root_of(l.info, table) != l.info.state_hash)
    fail("{}: the leaf table does not hash to the checkpoint's state hash (corrupt)",
         file.string());
  return table;
}

StateHasher hash_payload(std::ifstream& in, const CheckpointLayout& l,
                         const std::filesystem::path& file) {
  in.clear();
  in.seekg(std::streamoff(l.payload));
  StateHasher h(l.info.genesis, l.info.step, l.info.num_params, l.info.version);
  std::vector<char> buf(size_t(1) << 24);
  for (uint64_t left = 3 * uint64_t(l.info.num_params) * 4; left > 0;) {
    const size_t n = size_t(std::min<uint64_t>(left, buf.size()));
    in.read(buf.data(), std::streamsize(n));
    if (!in) fail("{}: truncated checkpoint payload", file.string());
    h.update(buf.data(), n);
    left -= n;
  }
  return h;
}

void require_state(const CheckpointInfo& info, const std::filesystem::path& file,
                   const Digest* expected) {
  if (expected && info.state_hash != *expected)
    fail("{}: holds the state {}, not the {} it was checked as (the file changed after the check)",
         file.string(), to_hex(info.state_hash).substr(0, 16), to_hex(*expected).substr(0, 16));
}

void verify_checkpoint(const std::filesystem::path& file, const Digest* expected) {
  std::ifstream in = open_checkpoint(file);
  CheckpointLayout l = read_checkpoint_layout(in, file);
  require_state(l.info, file, expected);
  StateHasher h = hash_payload(in, l, file);
  if (h.finish() != l.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", file.string());
  if (l.info.version == 3) {
    std::vector<Digest> table(size_t(l.leaves));
    read_at(in, l.table, table.data(), 32 * l.leaves, file);
    if (table != h.leaves())
      fail("{}: the leaf table does not match the payload (corrupt)", file.string());
  }
}

uint64_t verify_checkpoint_leaves(const std::filesystem::path& file,
                                  const std::vector<uint64_t>& leaves, const Digest* expected) {
  std::ifstream in = open_checkpoint(file);
  CheckpointLayout l = read_checkpoint_layout(in, file);
  require_state(l.info, file, expected);
  if (l.info.version == 2) {
    verify_checkpoint(file, expected);
    return std::filesystem::file_size(file);
  }
  const std::vector<Digest> table = read_leaf_table(in, l, file);
  uint64_t bytes = kHeaderBytes + kTrailerBytes + 32 * l.leaves;
  const uint64_t total = 3 * uint64_t(l.info.num_params) * 4;
  const uint64_t leaf_bytes = checkpoint_leaf_bytes(l.info.num_params);
  std::vector<char> buf(leaf_bytes);
  for (uint64_t i : leaves) {
    WIT_CHECK(i < l.leaves, "leaf {} of a checkpoint of {} leaves", i, l.leaves);
    const uint64_t begin = i * leaf_bytes;
    const uint64_t len = std::min(leaf_bytes, total - begin);
    read_at(in, l.payload + begin, buf.data(), len, file);
    bytes += len;
    if (checkpoint_leaf_hash(buf.data(), size_t(len)) != table[size_t(i)])
      fail("{}: leaf {} (payload bytes {} to {}) does not match its leaf table entry (corrupt)",
           file.string(), i, begin, begin + len - 1);
  }
  return bytes;
}

CheckpointInfo parse_checkpoint(const std::string& bytes, const std::string& where) {
  if (bytes.size() < kHeaderBytes + kTrailerBytes)
    fail("{} is not a wit checkpoint (bad magic)", where);
  CheckpointLayout l = parse_header(bytes.data(), bytes.size(), where);
  check_trailer(bytes.data() + bytes.size() - kTrailerBytes, l.info, where);
  StateHasher h(l.info.genesis, l.info.step, l.info.num_params, l.info.version);
  h.update(bytes.data() + kHeaderBytes, 3 * size_t(l.info.num_params) * 4);
  if (h.finish() != l.info.state_hash)
    fail("{}: checkpoint contents do not match their recorded SHA-256 (corrupt)", where);
  if (l.info.version == 3 &&
      std::memcmp(bytes.data() + l.table, h.leaves().data(), 32 * l.leaves) != 0)
    fail("{}: the leaf table does not match the payload (corrupt)", where);
  return l.info;
}

void remove_checkpoint_temporaries(const std::filesystem::path& run_dir) {
  const auto dir = run_dir / "checkpoints";
  if (!std::filesystem::is_directory(dir)) return;
  static const std::regex name(R"(step_\d{8,}\.ckpt\.tmp\.\d+)");
  std::vector<std::filesystem::path> stale;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (std::regex_match(e.path().filename().string(), name)) stale.push_back(e.path());
  for (const auto& p : stale) std::filesystem::remove(p);
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
