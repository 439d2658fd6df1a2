#include "record/signing.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/fs.h"
#include "core/sha256.h"
#include "tests/data/temp_dir.h"

namespace wit::witness {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

// RFC 8032 section 7.1, TEST 1: the empty message.
constexpr const char* kRfcSecret =
    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
constexpr const char* kRfcPublic =
    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
constexpr const char* kRfcSignature =
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b4"
    "6bd25bf5f0595bbe24655141438e7a100b";

std::string hex(const PublicKey& k) { return to_hex(k.data(), k.size()); }
std::string hex(const Signature& s) { return to_hex(s.data(), s.size()); }

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Sets the process umask for one scope (the tests run on one thread).
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t m) : old_(::umask(m)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST(Signing, SignedMessageVerifies) {
  auto key = SigningKey::generate();
  Signature s = key.sign("head of the witness log");
  EXPECT_TRUE(verify_signature(key.public_key(), "head of the witness log", s));
  EXPECT_EQ(key.sign("head of the witness log"), s);  // Ed25519 is deterministic
  EXPECT_TRUE(verify_signature(key.public_key(), "", key.sign("")));
}

TEST(Signing, VerifyRejectsAlteredMessageSignatureOrKey) {
  auto key = SigningKey::generate();
  std::string msg = "step 41 weights 9f2c";
  Signature s = key.sign(msg);

  std::string altered = msg;
  altered[5] ^= 1;
  EXPECT_FALSE(verify_signature(key.public_key(), altered, s));
  EXPECT_FALSE(verify_signature(key.public_key(), msg + "x", s));

  for (size_t i : {size_t(0), size_t(31), size_t(32), size_t(63)}) {
    Signature bad = s;
    bad[i] ^= 0x40;
    EXPECT_FALSE(verify_signature(key.public_key(), msg, bad)) << "byte " << i;
  }

  auto other = SigningKey::generate();
  EXPECT_NE(other.public_key(), key.public_key());
  EXPECT_FALSE(verify_signature(other.public_key(), msg, s));

  PublicKey garbage{};
  garbage.fill(0xff);  // not a point on the curve: an answer of false, not an exception
  EXPECT_FALSE(verify_signature(garbage, msg, s));
}

TEST(Signing, Rfc8032TestVector1) {
  auto key = SigningKey::from_raw_private(digest_from_hex(kRfcSecret, "secret"));
  EXPECT_EQ(hex(key.public_key()), kRfcPublic);
  Signature s = key.sign("");
  EXPECT_EQ(hex(s), kRfcSignature);
  EXPECT_TRUE(verify_signature(load_public_key(kRfcPublic), "", s));
}

TEST(Signing, SaveLoadRoundTrip) {
  TempDir dir;
  auto key = SigningKey::generate();
  auto file = dir / "signing-key.pem";
  key.save(file);
  EXPECT_EQ(read_text_file(file).rfind("-----BEGIN PRIVATE KEY-----\n", 0), 0u);  // PKCS#8

  auto loaded = SigningKey::load(file);
  EXPECT_EQ(loaded.public_key(), key.public_key());
  EXPECT_TRUE(verify_signature(key.public_key(), "m", loaded.sign("m")));
  EXPECT_EQ(loaded.sign("m"), key.sign("m"));
}

TEST(Signing, SaveCreatesParentDirectoriesAndLeavesNoTemporaries) {
  TempDir dir;
  auto key = SigningKey::generate();
  auto file = dir / "a/b/signing-key.pem";
  key.save(file);
  key.save_public(dir / "a/b/signing-key.pem.pub");
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "a/b")) {
    (void)e;
    ++n;
  }
  EXPECT_EQ(n, 2u);
}

TEST(Signing, FileModes) {
  TempDir dir;
  ScopedUmask permissive(0);  // the private key must not depend on the umask to stay private
  auto key = SigningKey::generate();
  key.save(dir / "k.pem");
  key.save_public(dir / "k.pem.pub");
  EXPECT_EQ(mode_of(dir / "k.pem"), 0600u);
  EXPECT_EQ(mode_of(dir / "k.pem.pub"), 0644u);
}

TEST(Signing, SaveRefusesToOverwrite) {
  TempDir dir;
  auto key = SigningKey::generate();
  auto file = dir / "k.pem";
  write_file_atomic(file, "precious");
  std::string err = error_of([&] { key.save(file); });
  EXPECT_TRUE(contains(err, file.string() + " already exists; remove it first")) << err;
  EXPECT_EQ(read_text_file(file), "precious");

  key.save(dir / "k2.pem");
  err = error_of([&] { SigningKey::generate().save(dir / "k2.pem"); });
  EXPECT_TRUE(contains(err, "already exists")) << err;
  EXPECT_EQ(SigningKey::load(dir / "k2.pem").public_key(), key.public_key());

  key.save_public(dir / "k.pub");
  err = error_of([&] { key.save_public(dir / "k.pub"); });
  EXPECT_TRUE(contains(err, "already exists")) << err;
}

TEST(Signing, LoadErrorsNameTheFileAndTheFault) {
  TempDir dir;
  auto missing = dir / "nope.pem";
  std::string err = error_of([&] { SigningKey::load(missing); });
  EXPECT_TRUE(contains(err, missing.string()) && contains(err, "does not exist")) << err;

  err = error_of([&] { SigningKey::load(dir.path()); });
  EXPECT_TRUE(contains(err, "is a directory")) << err;

  auto garbage = dir / "garbage.pem";
  write_file_atomic(garbage, "this is not a key\n");
  err = error_of([&] { SigningKey::load(garbage); });
  EXPECT_TRUE(contains(err, garbage.string() + " is not a PEM private key")) << err;

  auto empty = dir / "empty.pem";
  write_file_atomic(empty, "");
  err = error_of([&] { SigningKey::load(empty); });
  EXPECT_TRUE(contains(err, empty.string() + " is not a PEM private key")) << err;

  // A valid key of another algorithm.
  EVP_PKEY* rsa = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t(1024));
  ASSERT_NE(rsa, nullptr);
  auto rsa_file = dir / "rsa.pem";
  std::FILE* f = std::fopen(rsa_file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(PEM_write_PrivateKey(f, rsa, nullptr, nullptr, 0, nullptr, nullptr), 1);
  std::fclose(f);
  EVP_PKEY_free(rsa);
  err = error_of([&] { SigningKey::load(rsa_file); });
  EXPECT_TRUE(contains(err, rsa_file.string()) && contains(err, "RSA") &&
              contains(err, "not Ed25519"))
      << err;

  // The public half where the private key belongs.
  auto pub = dir / "k.pem.pub";
  SigningKey::generate().save_public(pub);
  err = error_of([&] { SigningKey::load(pub); });
  EXPECT_TRUE(contains(err, pub.string() + " is a public key")) << err;
}

TEST(Signing, LoadPublicKeyFromHexOrPem) {
  TempDir dir;
  auto key = SigningKey::generate();
  std::string h = hex(key.public_key());
  EXPECT_EQ(load_public_key(h), key.public_key());
  std::string upper = h;
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(load_public_key(upper), key.public_key());
  EXPECT_EQ(load_public_key(h + "\n"), key.public_key());

  auto pub = dir / "k.pem.pub";
  key.save_public(pub);
  EXPECT_EQ(read_text_file(pub).rfind("-----BEGIN PUBLIC KEY-----\n", 0), 0u);
  EXPECT_EQ(load_public_key(pub.string()), key.public_key());

  std::string err = error_of([&] { load_public_key(h.substr(1)); });
  EXPECT_TRUE(contains(err, "neither 64 hex digits nor an existing file")) << err;

  auto priv = dir / "k.pem";
  key.save(priv);
  err = error_of([&] { load_public_key(priv.string()); });
  EXPECT_TRUE(contains(err, priv.string() + " is a private key")) << err;

  auto garbage = dir / "garbage.pub";
  write_file_atomic(garbage, "nothing here");
  err = error_of([&] { load_public_key(garbage.string()); });
  EXPECT_TRUE(contains(err, garbage.string() + " is not a PEM public key")) << err;
}

TEST(Signing, KeyIdIsStableAndShort) {
  // SHA-256("wit-key-id-v1" ‖ RFC 8032 test 1 public key), first 16 hex digits.
  EXPECT_EQ(key_id(load_public_key(kRfcPublic)), "72d88b550b100eea");

  auto key = SigningKey::generate();
  std::string id = key_id(key.public_key());
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key_id(key.public_key()), id);
  EXPECT_NE(key_id(SigningKey::generate().public_key()), id);
}

TEST(Signing, DefaultKeyPath) {
  {
    ScopedEnv key("WIT_SIGNING_KEY", "/keys/mine.pem");
    EXPECT_EQ(default_key_path(), "/keys/mine.pem");
  }
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv key("WIT_SIGNING_KEY", "");  // empty counts as unset
    EXPECT_EQ(default_key_path(), "/home/someone/.config/wit/signing-key.pem");
  }
  ScopedEnv key("WIT_SIGNING_KEY", nullptr);
  EXPECT_EQ(default_key_path(), "/home/someone/.config/wit/signing-key.pem");
  ScopedEnv no_home("HOME", nullptr);
  std::string err = error_of([] { default_key_path(); });
  EXPECT_TRUE(contains(err, "WIT_SIGNING_KEY") && contains(err, "HOME")) << err;
}

}  // namespace
}  // namespace wit::witness
