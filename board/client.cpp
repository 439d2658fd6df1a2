#include "board/client.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "board/net.h"
#include "core/error.h"
#include "core/json.h"

namespace wit::board {

namespace {

// How many times in a row a download asks again, a second apart, while the board answers 503.
constexpr int kBusyRetries = 600;

// A connection that broke (worth retrying), as opposed to an answer from the board.
struct Broken : Error {
  using Error::Error;
};

Digest sha256_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot read {}", file.string());
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    h.update(buf.data(), size_t(in.gcount()));
  }
  return h.finish();
}

}  // namespace

Client::Client(const std::string& server, std::string token) : token_(std::move(token)) {
  const std::string scheme = "http://";
  if (server.rfind(scheme, 0) != 0)
    fail("--server {}: expected http://HOST:PORT (put TLS in front with a reverse proxy)", server);
  std::string rest = server.substr(scheme.size());
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    if (slash + 1 != rest.size()) fail("--server {}: give the board's root, http://HOST:PORT/", server);
    rest.resize(slash);
  }
  const size_t colon = rest.rfind(':');
  host_ = colon == std::string::npos ? rest : rest.substr(0, colon);
  port_ = colon == std::string::npos ? "80" : rest.substr(colon + 1);
  if (host_.empty() || port_.empty() || port_.find_first_not_of("0123456789") != std::string::npos)
    fail("--server {}: expected http://HOST:PORT", server);
}

std::pair<int, std::string> Client::exchange(const std::string& method, const std::string& target,
                                             const std::string& body, std::chrono::seconds timeout) {
  http::response<http::string_body> res;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(tcp::resolver(io).resolve(host_, port_));
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "wit");
    if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(stream, buffer, parser);
    res = parser.release();
  } catch (const boost::system::system_error& e) {
    throw Broken(fmt::format("board at {}:{}: {} {}: {}", host_, port_, method, target, e.code().message()));
  }
  return {res.result_int(), std::move(res.body())};
}

nlohmann::json Client::call(const std::string& method, const std::string& target,
                            const std::string& body, std::chrono::seconds timeout) {
  const auto [status, text] = exchange(method, target, body, timeout);
  const nlohmann::json j = parse_untrusted_json(text);
  if (j.is_discarded()) {
    fail("board at {}:{}: {} {}: answered {} with no JSON", host_, port_, method, target, status);
  }
  if (status >= 400)
    fail("board at {}:{}: {} {}: {} {}", host_, port_, method, target, status,
         j.value("error", std::string("(no message)")));
  return j;
}

std::filesystem::path Client::download(const std::string& sha_hex, uint64_t size, BlobStore& cache,
                                       const std::function<void(const std::string&)>& progress) {
  const Digest sha = digest_from_hex(sha_hex, "file");
  if (const auto have = cache.path_of(sha)) return *have;
  int busy = 0;  // 503s in a row: the board sends as many pieces as it holds at once
  for (int attempt = 1;; ++attempt) {
    try {
      uint64_t at = cache.begin(sha, size);
      while (at < size) {
        const auto [status, bytes] =
            exchange("GET", fmt::format("/api/files/{}/content?offset={}", sha_hex, at));
        if (status == 503 && ++busy <= kBusyRetries) {
          if (busy % 10 == 1) progress(fmt::format("file {}: the board is busy sending; waiting", sha_hex.substr(0, 16)));
          std::this_thread::sleep_for(std::chrono::seconds(1));
          continue;
        }
        busy = 0;
        if (status >= 400) {
          const auto j = parse_untrusted_json(bytes);
          fail("board at {}:{}: file {}: {} {}", host_, port_, sha_hex.substr(0, 16), status,
               j.is_object() ? j.value("error", std::string("(no message)")) : bytes.substr(0, 200));
        }
        if (bytes.empty()) fail("board at {}:{}: file {} ended at byte {} of {}", host_, port_, sha_hex.substr(0, 16), at, size);
        at = cache.append(sha, at, bytes.data(), std::min<uint64_t>(bytes.size(), size - at));
        progress(fmt::format("file {}: {} of {} bytes", sha_hex.substr(0, 16), at, size));
      }
      return cache.finish(sha);  // checks the hash: the board cannot hand over other bytes
    } catch (const Broken& e) {
      if (attempt >= 5) throw Error(e.what());
      progress(fmt::format("{}; retrying", e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(500 * attempt));
    }
  }
}

Digest Client::upload(const std::filesystem::path& file, const UploadListener& listener,
                      uint64_t piece_bytes) {
  const uint64_t size = std::filesystem::file_size(file);
  const Digest sha = sha256_of(file);
  const std::string target = "/api/files/" + to_hex(sha);
  std::ifstream in(file, std::ios::binary);
  std::string piece;
  for (int attempt = 1;; ++attempt) {
    try {
      uint64_t at = call("GET", fmt::format("{}?size={}", target, size))["offset"].get<uint64_t>();
      if (at == size) {
        listener.note(fmt::format("{}: on the board already ({} bytes, sha256 {})", file.string(),
                                  size, to_hex(sha).substr(0, 16)));
        listener.bytes(size, 0);
        return sha;
      }
      if (at > 0) {
        listener.note(fmt::format("{}: resuming at byte {} of {}", file.string(), at, size));
        listener.bytes(at, 0);
      }
      while (at < size) {
        piece.resize(size_t(std::min<uint64_t>(piece_bytes, size - at)));
        in.clear();
        in.seekg(std::streamoff(at));
        in.read(piece.data(), std::streamsize(piece.size()));
        if (uint64_t(in.gcount()) != piece.size()) fail("{} changed while it was being uploaded", file.string());
        const uint64_t before = at;
        at = call("PUT", fmt::format("{}?offset={}", target, at), piece)["offset"].get<uint64_t>();
        listener.bytes(at, at > before ? at - before : 0);
      }
      return sha;
    } catch (const Broken& e) {
      if (attempt >= 5) throw Error(e.what());
      listener.note(fmt::format("{}; retrying", e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(500 * attempt));
    }
  }
}

}  // namespace wit::board
