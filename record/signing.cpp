#include "record/signing.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"

namespace wit::witness {

namespace fs = std::filesystem;

// OpenSSL handles owned by unique_ptr, in a named namespace: SigningKey::Impl holds one, and a
// member's type from an anonymous namespace would differ between translation units.
namespace openssl_handles {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

}  // namespace openssl_handles

using openssl_handles::BioPtr;
using openssl_handles::MdCtxPtr;
using openssl_handles::PkeyPtr;

namespace {

// The oldest queued OpenSSL error as text; clears the queue so later calls start clean.
std::string openssl_error() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no OpenSSL error recorded";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

const unsigned char* bytes_of(std::string_view s) {
  static const unsigned char empty = 0;  // OpenSSL wants a pointer even for zero bytes
  return s.empty() ? &empty : reinterpret_cast<const unsigned char*>(s.data());
}

// The contents of a PEM written into a BIO_s_secmem buffer (cleansed when the BIO is freed).
std::string_view bio_contents(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string_view(data, size_t(n)) : std::string_view();
}

// Never prompts: an encrypted key is reported as an error instead of blocking on a terminal.
int no_passphrase(char*, int, int, void*) { return 0; }

void fail_if_exists(const fs::path& file) {
  std::error_code ec;
  // symlink_status: a dangling link also counts, since writing through it would create a file.
  if (fs::exists(fs::symlink_status(file, ec)))
    fail("{} already exists; remove it first or choose another path", file.string());
}

void write_all_fd(int fd, std::string_view bytes, const fs::path& tmp) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write {}: {}", tmp.string(), std::strerror(errno));
    bytes.remove_prefix(size_t(n));
  }
}

// Creates `file` with `bytes`, never replacing an existing file: the data goes to a temporary
// beside it, created with `mode` (so a private key is never readable by others, not even
// briefly), is fsynced, and is then hard-linked into place, which fails if the name was taken
// meanwhile. `exact_mode` also overrides the umask (0600 for a private key whatever it is).
void create_file_atomic(const fs::path& file, std::string_view bytes, mode_t mode,
                        bool exact_mode) {
  fail_if_exists(file);
  fs::path dir = file.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      fail("cannot create directory {} for {}: {}", dir.string(), file.string(), ec.message());
  }

  static std::atomic<unsigned> counter{0};
  fs::path tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = file;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 && (errno != EEXIST || attempt >= 100))
      fail("cannot create {}: {}", tmp.string(), std::strerror(errno));
  }

  struct Cleanup {  // removes the temporary on every path out, success included
    const fs::path& tmp;
    int fd;
    ~Cleanup() {
      if (fd >= 0) ::close(fd);
      ::unlink(tmp.c_str());
    }
  } cleanup{tmp, fd};

  if (exact_mode && ::fchmod(fd, mode) != 0)
    fail("cannot set the mode of {}: {}", tmp.string(), std::strerror(errno));
  write_all_fd(fd, bytes, tmp);
  if (::fsync(fd) != 0) fail("cannot write {}: {}", tmp.string(), std::strerror(errno));
  int rc = ::close(cleanup.fd);
  cleanup.fd = -1;
  if (rc != 0) fail("cannot write {}: {}", tmp.string(), std::strerror(errno));

  if (::link(tmp.c_str(), file.c_str()) != 0) {
    if (errno == EEXIST)
      fail("{} already exists; remove it first or choose another path", file.string());
    // File systems without hard links: rename, having checked for the target just above.
    int link_errno = errno;
    fail_if_exists(file);
    if (::rename(tmp.c_str(), file.c_str()) != 0)
      fail("cannot move {} into place ({}; {})", file.string(), std::strerror(link_errno),
           std::strerror(errno));
  }
  // Make the new name durable too; failing to sync a directory is not worth failing for.
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

// Reads a whole file for key parsing; errors name the file and what it was meant to hold.
std::string read_key_file(const fs::path& file, std::string_view what) {
  std::error_code ec;
  auto st = fs::status(file, ec);
  if (!fs::exists(st)) fail("{} {} does not exist", what, file.string());
  if (fs::is_directory(st)) fail("{} {} is a directory, not a key file", what, file.string());
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot read {} {}: {}", what, file.string(), std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("cannot read {} {}: {}", what, file.string(), std::strerror(errno));
  return ss.str();
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

void require_ed25519(EVP_PKEY* key, const fs::path& file) {
  if (EVP_PKEY_get_id(key) == EVP_PKEY_ED25519) return;
  const char* type = EVP_PKEY_get0_type_name(key);
  fail("{} holds a key of type {}, not Ed25519; create an Ed25519 key with `wit keygen`",
       file.string(), type ? type : "unknown");
}

}  // namespace

struct SigningKey::Impl {
  PkeyPtr pkey;
};

SigningKey::SigningKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  size_t len = public_.size();
  if (EVP_PKEY_get_raw_public_key(impl_->pkey.get(), public_.data(), &len) != 1 ||
      len != public_.size())
    fail("cannot read the Ed25519 public key: {}", openssl_error());
}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

SigningKey SigningKey::generate() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!key) fail("cannot generate an Ed25519 key: {}", openssl_error());
  return SigningKey(std::make_unique<Impl>(Impl{std::move(key)}));
}

SigningKey SigningKey::from_raw_private(const std::array<uint8_t, 32>& secret) {
  PkeyPtr key(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, secret.data(), secret.size()));
  if (!key) fail("cannot make an Ed25519 key from raw bytes: {}", openssl_error());
  return SigningKey(std::make_unique<Impl>(Impl{std::move(key)}));
}

SigningKey SigningKey::load(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec)))
    fail("signing key {} does not exist; create one with `wit keygen`", file.string());
  std::string pem = read_key_file(file, "signing key");
  struct Wipe {  // the file's bytes are the secret: do not leave them in freed memory
    std::string& s;
    ~Wipe() { OPENSSL_cleanse(s.data(), s.size()); }
  } wipe{pem};

  if (contains(pem, "-----BEGIN ENCRYPTED PRIVATE KEY-----"))
    fail(
        "{} is encrypted with a passphrase; wit needs an unencrypted key (decrypt a copy with "
        "`openssl pkey -in {} -out NEW.pem`)",
        file.string(), file.string());
  BioPtr bio(BIO_new_mem_buf(pem.data(), int(pem.size())));
  if (!bio) fail("cannot read signing key {}: {}", file.string(), openssl_error());
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) {
    std::string why = openssl_error();
    if (contains(pem, "-----BEGIN PUBLIC KEY-----"))
      fail(
          "{} is a public key; give the private key (`wit keygen` writes the public one beside "
          "it with .pub appended)",
          file.string());
    fail("{} is not a PEM private key ({})", file.string(), why);
  }
  require_ed25519(key.get(), file);
  return SigningKey(std::make_unique<Impl>(Impl{std::move(key)}));
}

void SigningKey::save(const fs::path& file) const {
  WIT_CHECK(impl_, "save of a moved-from SigningKey");
  BioPtr bio(BIO_new(BIO_s_secmem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), impl_->pkey.get(), nullptr, nullptr, 0, nullptr,
                                       nullptr) != 1)
    fail("cannot encode the signing key for {}: {}", file.string(), openssl_error());
  create_file_atomic(file, bio_contents(bio.get()), 0600, true);
}

void SigningKey::save_public(const fs::path& file) const {
  WIT_CHECK(impl_, "save_public of a moved-from SigningKey");
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), impl_->pkey.get()) != 1)
    fail("cannot encode the public key for {}: {}", file.string(), openssl_error());
  create_file_atomic(file, bio_contents(bio.get()), 0644, false);
}

Signature SigningKey::sign(std::string_view message) const {
  WIT_CHECK(impl_, "sign with a moved-from SigningKey");
  MdCtxPtr ctx(EVP_MD_CTX_new());
  Signature sig{};
  size_t len = sig.size();
  // Ed25519 hashes internally: no digest is given, and the message goes in one call.
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, impl_->pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig.data(), &len, bytes_of(message), message.size()) != 1 ||
      len != sig.size())
    fail("Ed25519 signing failed: {}", openssl_error());
  return sig;
}

bool verify_signature(const PublicKey& key, std::string_view message, const Signature& signature) {
  PkeyPtr pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, key.data(), key.size()));
  MdCtxPtr ctx(EVP_MD_CTX_new());
  bool ok = pkey && ctx &&
            EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) == 1 &&
            EVP_DigestVerify(ctx.get(), signature.data(), signature.size(), bytes_of(message),
                             message.size()) == 1;
  ERR_clear_error();  // a bad signature is an answer, not an error to report later
  return ok;
}

std::optional<Signature> signature_from_hex(std::string_view hex) {
  if (hex.size() != 128 || hex.find_first_not_of("0123456789abcdef") != std::string_view::npos)
    return std::nullopt;
  Signature sig{};
  auto nibble = [](char c) { return uint8_t(c <= '9' ? c - '0' : c - 'a' + 10); };
  for (size_t i = 0; i < sig.size(); ++i) sig[i] = uint8_t(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return sig;
}

PublicKey load_public_key(const std::string& file_or_hex) {
  std::string s = file_or_hex;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  std::string_view trimmed = std::string_view(s).substr(start);
  bool hex = trimmed.size() == 64;
  for (char c : trimmed) hex = hex && std::isxdigit(static_cast<unsigned char>(c));
  if (hex) return digest_from_hex(trimmed, "public key");

  fs::path file = file_or_hex;
  std::error_code ec;
  if (!fs::exists(file, ec))
    fail("public key '{}' is neither 64 hex digits nor an existing file", file_or_hex);
  std::string pem = read_key_file(file, "public key");
  BioPtr bio(BIO_new_mem_buf(pem.data(), int(pem.size())));
  if (!bio) fail("cannot read public key {}: {}", file.string(), openssl_error());
  PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) {
    std::string why = openssl_error();
    if (contains(pem, "PRIVATE KEY-----"))
      fail(
          "{} is a private key; give its public key (the .pub file `wit keygen` wrote) or the "
          "key in hex",
          file.string());
    fail("{} is not a PEM public key ({})", file.string(), why);
  }
  require_ed25519(key.get(), file);
  PublicKey out{};
  size_t len = out.size();
  if (EVP_PKEY_get_raw_public_key(key.get(), out.data(), &len) != 1 || len != out.size())
    fail("cannot read the Ed25519 key in {}: {}", file.string(), openssl_error());
  return out;
}

std::string key_id(const PublicKey& key) {
  Digest d = Sha256().update("wit-key-id-v1").update(key.data(), key.size()).finish();
  return to_hex(d).substr(0, 16);
}

fs::path default_key_path() {
  if (const char* p = std::getenv("WIT_SIGNING_KEY"); p && *p) return p;
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    fail(
        "no default signing key path: neither WIT_SIGNING_KEY nor HOME is set; name the key file "
        "explicitly");
  return fs::path(home) / ".config" / "wit" / "signing-key.pem";
}

}  // namespace wit::witness
