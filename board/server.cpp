#include "board/server.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "board/net.h"
#include "core/error.h"

namespace wit::board {

namespace {

// One connection: read a request, answer it, repeat while the client keeps the connection.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Site& site, const ServerOptions& o, asio::thread_pool& slow)
      : stream_(std::move(socket)), site_(site), o_(o), slow_(slow) {}
  void start() { read(); }

 private:
  // The header first: the path decides how large a body may be (file pieces are larger).
  void read() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    // The larger limit while the header is read (a declared length is checked against it
    // then); the route's own limit once the path is known.
    limit_ = std::max(o_.max_body, o_.max_piece);
    parser_->body_limit(limit_);
    stream_.expires_after(o_.timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              self->on_header(ec);
                            });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read(ec);
    limit_ = parser_->get().target().starts_with("/api/files/") ? o_.max_piece : o_.max_body;
    const auto declared = parser_->content_length();
    if (declared && *declared > limit_) return on_read(http::error::body_limit);
    parser_->body_limit(limit_);
    stream_.expires_after(o_.timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof)
      return close();
    if (ec == http::error::body_limit)
      return reply(error_response(413, fmt::format("the body is over this board's limit of {} bytes", limit_)), false);
    if (ec == http::error::header_limit)
      return reply(error_response(431, "the request's headers are too large"), false);
    if (ec) return reply(error_response(400, fmt::format("malformed request: {}", ec.message())), false);
    const auto& req = parser_->get();
    Request r{std::string(req.method_string()), std::string(req.target()), req.body(),
              std::string(req[http::field::authorization])};

    const unsigned version = req.version();
    const bool keep_alive = req.keep_alive(), head = req.method() == http::verb::head;
    if (site_.slow(r)) {
      // Long work (a submission's audit) runs on its own threads, so that pages and uploads
      // never wait behind it; the answer comes back to this connection's strand.
      asio::post(slow_, [self = shared_from_this(), r = std::move(r), version, keep_alive, head] {
        Response out = self->answer(r);
        asio::post(self->stream_.get_executor(), [self, out = std::move(out), version, keep_alive, head]() mutable {
          self->respond(std::move(out), version, keep_alive, head);
        });
      });
      return;
    }
    respond(answer(r), version, keep_alive, head);
  }

  Response answer(const Request& r) const {
    try {
      return site_.handle(r);
    } catch (const std::exception& e) {
      // A fault of the board's own (its database, its files): the request fails, the board stays.
      std::fprintf(stderr, "wit board: %s %s: %s\n", r.method.c_str(), r.target.c_str(), e.what());
      return {500, "application/json",
              nlohmann::json{{"error", fmt::format("the board failed to answer: {}", e.what())}}.dump() + "\n"};
    }
  }

  void respond(Response out, unsigned version, bool keep_alive, bool head) {
    http::response<http::string_body> res{http::status(out.status), version};
    res.set(http::field::server, "wit-board");
    res.set(http::field::content_type, out.content_type);
    res.keep_alive(keep_alive);
    const size_t length = out.body.size();  // HEAD: the length GET would send, and no body
    if (!head) res.body() = std::move(out.body);
    res.content_length(length);
    reply(std::move(res), keep_alive);
  }

  http::response<http::string_body> error_response(int status, const std::string& message) {
    http::response<http::string_body> res{http::status(status), 11};
    res.set(http::field::server, "wit-board");
    res.set(http::field::content_type, "application/json");
    res.body() = json_error_body(message);
    res.keep_alive(false);
    res.prepare_payload();
    return res;
  }

  static std::string json_error_body(const std::string& message) {
    std::string out = "{\"error\": \"";
    for (char c : message) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"}\n";
  }

  void reply(http::response<http::string_body> res, bool keep_alive) {
    res_ = std::make_shared<http::response<http::string_body>>(std::move(res));
    stream_.expires_after(o_.timeout);
    http::async_write(stream_, *res_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<http::response<http::string_body>> res_;
  uint64_t limit_ = 0;
  const Site& site_;
  const ServerOptions& o_;
  asio::thread_pool& slow_;
};

}  // namespace

struct Server::Impl {
  Impl(const Site& s, const ServerOptions& o)
      : site(s), options(o), io(std::max(1, o.threads)), acceptor(io),
        slow(size_t(std::max(1, o.slow_threads))) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (!ec) std::make_shared<Session>(std::move(socket), site, options, slow)->start();
      if (acceptor.is_open()) accept();
    });
  }

  const Site& site;
  ServerOptions options;
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::thread_pool slow;
  std::optional<asio::signal_set> signals;
};

Server::Server(const Site& site, const ServerOptions& o) : impl_(std::make_unique<Impl>(site, o)) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(o.host, ec);
  if (ec) fail("board: '{}' is not an IP address to listen on", o.host);
  const tcp::endpoint at{address, o.port};
  auto& a = impl_->acceptor;
  a.open(at.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(at, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("board: cannot listen on {}:{}: {}", o.host, o.port, ec.message());
  impl_->accept();
}

Server::~Server() { stop(); }

uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }

void Server::run() {
  std::vector<std::thread> more;
  for (int i = 1; i < impl_->options.threads; ++i) more.emplace_back([this] { impl_->io.run(); });
  impl_->io.run();
  for (auto& t : more) t.join();
}

void Server::stop_on_interrupt(std::function<void(int)> said) {
  impl_->signals.emplace(impl_->io, SIGINT, SIGTERM);
  impl_->signals->async_wait([this, said](beast::error_code ec, int sig) {
    if (ec) return;
    if (said) said(sig);
    stop();
  });
}

void Server::stop() {
  asio::post(impl_->io, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->io.stop();
}

}  // namespace wit::board
