// A board's client side: JSON requests with a participant's token, and file uploads in pieces
// that resume where the board says the upload is (after a broken connection, or a client that
// was stopped and started again).
//
//   Client c("http://127.0.0.1:8080/", token);
//   c.upload("runs/tiny/witness.h5", {on_bytes, on_note});
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "board/blob_store.h"
#include "core/sha256.h"

namespace wit::board {

class Client {
 public:
  // `server`: http://HOST:PORT[/] (TLS, where wanted, is a reverse proxy's job).
  Client(const std::string& server, std::string token);

  // One request; a 4xx/5xx answer throws an Error carrying the board's message.
  // `timeout` bounds the whole exchange (a submission is audited before it is answered).
  nlohmann::json call(const std::string& method, const std::string& target,
                      const std::string& body = "",
                      std::chrono::seconds timeout = std::chrono::seconds(120));

  // What an upload tells its caller: how many of the file's bytes the board holds and how many
  // of them this call just sent (after each piece; sent = 0 where the board held them already),
  // and events worth a line (the file on the board already, resuming, retrying).
  struct UploadListener {
    std::function<void(uint64_t on_board, uint64_t sent)> bytes;
    std::function<void(const std::string& line)> note;
  };
  // Uploads `file` (piece_bytes at a time), resuming from the offset the board reports; a
  // broken connection is retried a few times. Returns the file's SHA-256.
  Digest upload(const std::filesystem::path& file, const UploadListener& listener,
                uint64_t piece_bytes = 8 << 20);

  // Downloads the board's file `sha_hex` of `size` bytes into `cache` (resuming a partial
  // download) and returns its path there; the content is checked against the hash.
  std::filesystem::path download(const std::string& sha_hex, uint64_t size, BlobStore& cache,
                                 const std::function<void(const std::string&)>& progress);

 private:
  // One request: the status and the body as received. A broken connection throws.
  std::pair<int, std::string> exchange(const std::string& method, const std::string& target,
                                       const std::string& body = "",
                                       std::chrono::seconds timeout = std::chrono::seconds(120));
  std::string host_, port_, token_;
};

}  // namespace wit::board
