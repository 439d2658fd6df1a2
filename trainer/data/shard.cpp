// llm.c shard reading (mmap, validated header) and writing (whole or incremental).
#include "trainer/data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/fs.h"

namespace wit::data {

// Tokens are handed out straight from the mapped file, which holds them little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "shards are read in place: little-endian hosts only");

namespace {

std::vector<int32_t> shard_header(uint64_t n_tokens) {
  std::vector<int32_t> header(256, 0);
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(n_tokens);
  return header;
}

void check_shard_tokens(const fs::path& path, uint64_t n) {
  if (n > kShardMaxTokens)
    fail("cannot write shard {}: {} tokens exceed the format's limit of {}", path.string(), n,
         kShardMaxTokens);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Writing

void write_shard(const fs::path& path, const std::vector<uint16_t>& tokens) {
  check_shard_tokens(path, tokens.size());
  std::vector<int32_t> header = shard_header(tokens.size());
  write_file_atomic(path, [&](std::FILE* f) {
    write_all(f, header.data(), kShardHeaderBytes, path);
    write_all(f, tokens.data(), tokens.size() * sizeof(uint16_t), path);
  });
}

ShardWriter::ShardWriter(const fs::path& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) fail("cannot create shard {}: {}", path.string(), std::strerror(errno));
  // A provisional header claiming 0 tokens: a crash leaves a file that fails validation.
  std::vector<int32_t> header = shard_header(0);
  write_all(file_, header.data(), kShardHeaderBytes, path_);
}

ShardWriter::~ShardWriter() {
  if (file_) {
    std::fclose(file_);
    std::error_code ec;
    fs::remove(path_, ec);
  }
}

void ShardWriter::append(const uint16_t* tokens, size_t n) {
  if (!file_) fail("shard {} was already finished; cannot append", path_.string());
  check_shard_tokens(path_, tokens_ + n);
  write_all(file_, tokens, n * sizeof(uint16_t), path_);
  tokens_ += n;
}

void ShardWriter::finish() {
  if (!file_) fail("shard {} was already finished", path_.string());
  std::vector<int32_t> header = shard_header(tokens_);
  if (std::fseek(file_, 0, SEEK_SET) != 0)
    fail("cannot write shard {}: {}", path_.string(), std::strerror(errno));
  write_all(file_, header.data(), kShardHeaderBytes, path_);
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0)
    fail("cannot write shard {}: {}", path_.string(), std::strerror(errno));
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) fail("cannot write shard {}: {}", path_.string(), std::strerror(errno));
}

// ---------------------------------------------------------------------------------------------
// Reading

Shard::Shard(const fs::path& path) : path_(path) {
  // O_NONBLOCK: a FIFO in a shard's place must not block the open; fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("cannot open shard {}: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot stat shard {}: {}", path.string(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("shard {} is not a regular file", path.string());
  }
  uint64_t bytes = static_cast<uint64_t>(st.st_size);
  if (bytes < kShardHeaderBytes) {
    ::close(fd);
    fail("{}: not an llm.c token shard: {} bytes, shorter than the {}-byte header", path.string(),
         bytes, kShardHeaderBytes);
  }
  map_ = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  int map_err = errno;
  ::close(fd);  // the mapping keeps the file open
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail("cannot map shard {}: {}", path.string(), std::strerror(map_err));
  }
  map_bytes_ = bytes;

  // From here on, a throw must unmap: the destructor does not run for a failed constructor.
  try {
    int32_t header[3];
    std::memcpy(header, map_, sizeof header);
    if (header[0] != kShardMagic)
      fail("{}: not an llm.c token shard: magic number {}, expected {}", path.string(), header[0],
           kShardMagic);
    if (header[1] != kShardVersion)
      fail("{}: unsupported shard version {} (wit reads version {}: uint16 tokens)", path.string(),
           header[1], kShardVersion);
    if (header[2] < 0) fail("{}: corrupt header: it says {} tokens", path.string(), header[2]);
    uint64_t claimed = static_cast<uint64_t>(header[2]);
    uint64_t held = (bytes - kShardHeaderBytes) / sizeof(uint16_t);
    if (held < claimed)
      fail("{}: truncated: header says {} tokens, file holds {}", path.string(), claimed, held);
    if (bytes != kShardHeaderBytes + claimed * sizeof(uint16_t))
      fail("{}: corrupt: header says {} tokens but the file is {} bytes (expected {})",
           path.string(), claimed, bytes, kShardHeaderBytes + claimed * sizeof(uint16_t));
    tokens_ = claimed;
    data_ = reinterpret_cast<const uint16_t*>(static_cast<const char*>(map_) + kShardHeaderBytes);
  } catch (...) {
    unmap();
    throw;
  }
}

void Shard::unmap() {
  if (map_) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  data_ = nullptr;
  tokens_ = 0;
}

Shard::~Shard() { unmap(); }

Shard::Shard(Shard&& other) noexcept
    : path_(std::move(other.path_)),
      map_(other.map_),
      map_bytes_(other.map_bytes_),
      data_(other.data_),
      tokens_(other.tokens_) {
  other.map_ = nullptr;
  other.map_bytes_ = 0;
  other.data_ = nullptr;
  other.tokens_ = 0;
}

Shard& Shard::operator=(Shard&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    std::swap(map_, other.map_);
    std::swap(map_bytes_, other.map_bytes_);
    std::swap(data_, other.data_);
    std::swap(tokens_, other.tokens_);
  }
  return *this;
}

// ---------------------------------------------------------------------------------------------
// TokenStream

TokenStream::TokenStream(const std::vector<fs::path>& shards) {
  std::vector<Shard> opened;
  opened.reserve(shards.size());
  for (const fs::path& p : shards) opened.emplace_back(p);
  *this = TokenStream(std::move(opened));
}

TokenStream::TokenStream(std::vector<Shard> shards) : shards_(std::move(shards)) {
  starts_.reserve(shards_.size());
  for (const Shard& s : shards_) {
    starts_.push_back(size_);
    size_ += s.size();
  }
}

void TokenStream::read(uint64_t offset, uint64_t n, uint16_t* out) const {
  if (offset > size_ || n > size_ - offset)
    fail("token stream: cannot read tokens [{}, {}): the stream holds {} tokens in {} shard(s)",
         offset, offset + n, size_, shards_.size());
  if (n == 0) return;
  // The last shard starting at or before `offset` (empty shards share a start with the next).
  size_t i = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1;
  while (n > 0) {
    uint64_t local = offset - starts_[i];
    uint64_t take = std::min<uint64_t>(n, shards_[i].size() - local);
    std::memcpy(out, shards_[i].tokens() + local, take * sizeof(uint16_t));
    out += take;
    offset += take;
    n -= take;
    ++i;
  }
}

}  // namespace wit::data
