// Ed25519 signing keys (OpenSSL): the trainer signs the witness log's head with its private key;
// anyone checks the signature with the public key named in the log.
//
//   auto key = SigningKey::generate();
//   key.save("signing-key.pem");                     // PKCS#8 PEM, mode 0600, written atomically
//   Signature s = key.sign(message);
//   bool ok = verify_signature(key.public_key(), message, s);
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace wit::witness {

using PublicKey = std::array<uint8_t, 32>;  // raw Ed25519 public key
using Signature = std::array<uint8_t, 64>;  // raw Ed25519 signature

class SigningKey {
 public:
  static SigningKey generate();
  // A key from its raw 32-byte Ed25519 secret (RFC 8032 "private key"), e.g. a test vector.
  static SigningKey from_raw_private(const std::array<uint8_t, 32>& secret);
  // Reads a PEM private key; errors name the file and say what is wrong with it (missing,
  // unreadable, not PEM, not an Ed25519 key).
  static SigningKey load(const std::filesystem::path& file);
  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  // Writes the private key as unencrypted PKCS#8 PEM with mode 0600, atomically; creates parent
  // directories and refuses to overwrite an existing file.
  void save(const std::filesystem::path& file) const;
  // Writes the public key as SubjectPublicKeyInfo PEM (mode 0644 less the umask), the same way.
  void save_public(const std::filesystem::path& file) const;

  const PublicKey& public_key() const { return public_; }
  // Pure Ed25519 (RFC 8032): deterministic, the message is not pre-hashed.
  Signature sign(std::string_view message) const;

 private:
  struct Impl;
  explicit SigningKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  PublicKey public_{};
};

// False for a wrong signature, message or key (including bytes that are not a valid key).
bool verify_signature(const PublicKey& key, std::string_view message, const Signature& signature);

// Reads a public key from 64 hex digits (the raw key) or else from a SubjectPublicKeyInfo PEM
// file, such as the .pub file `wit keygen` writes.
PublicKey load_public_key(const std::string& file_or_hex);

// A signature from 128 lowercase hex digits; nullopt for anything else.
std::optional<Signature> signature_from_hex(std::string_view hex);

// Short, stable name of a key: the first 16 hex digits of SHA-256("wit-key-id-v1" ‖ key).
std::string key_id(const PublicKey& key);

// Where `wit train` and `wit keygen` keep the default key: $WIT_SIGNING_KEY if set and not
// empty, else $HOME/.config/wit/signing-key.pem (an error when HOME is unset too).
std::filesystem::path default_key_path();

}  // namespace wit::witness
