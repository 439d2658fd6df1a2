#include "board/server.h"

#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "board/net.h"
#include "core/error.h"

namespace wit::board {

namespace {

// Connections open now, in all and per client address. A Slot counts one while it lives.
class ConnectionCount {
 public:
  class Slot {
   public:
    Slot(ConnectionCount& c, asio::ip::address a) : c_(c), a_(std::move(a)) {}
    ~Slot() { c_.release(a_); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    ConnectionCount& c_;
    asio::ip::address a_;
  };
  ConnectionCount(int max_total, int max_per_address)
      : max_total_(max_total), max_per_address_(max_per_address) {}
  // A slot for a connection from `a`, or nothing when it would pass a limit.
  std::shared_ptr<Slot> take(const asio::ip::address& a) {
    std::lock_guard<std::mutex> lock(m_);
    int& mine = per_address_[a];
    if (total_ >= max_total_ || mine >= max_per_address_) {
      if (mine == 0) per_address_.erase(a);
      return nullptr;
    }
    ++total_, ++mine;
    return std::make_shared<Slot>(*this, a);
  }

 private:
  void release(const asio::ip::address& a) {
    std::lock_guard<std::mutex> lock(m_);
    --total_;
    if (--per_address_[a] == 0) per_address_.erase(a);
  }
  std::mutex m_;
  int total_ = 0;
  const int max_total_, max_per_address_;
  std::map<asio::ip::address, int> per_address_;
};

// One connection: read a request, answer it, repeat while the client keeps the connection.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Site& site, const ServerOptions& o, asio::thread_pool& slow,
          std::shared_ptr<ConnectionCount::Slot> slot)
      : stream_(std::move(socket)), site_(site), o_(o), slow_(slow), slot_(std::move(slot)) {}
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
      // A fault of the board's own (its database, its files): the request fails, the board
      // stays, and what went wrong (paths, database errors) stays in the board's own log.
      std::fprintf(stderr, "wit board: %s %s: %s\n", r.method.c_str(), r.target.c_str(), e.what());
      return {500, "application/json",
              nlohmann::json{{"error", "the board failed to answer (the cause is in its log)"}}.dump() + "\n"};
    }
  }

  // What every answer says besides its body: never sniffed as another type, never framed, and
  // a page loads nothing and runs nothing (the board's pages are self-contained HTML and CSS).
  template <typename Response>
  static void set_common_headers(Response& res) {
    res.set(http::field::server, "wit-board");
    res.set("X-Content-Type-Options", "nosniff");
    res.set("X-Frame-Options", "DENY");
    res.set("Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  }

  void respond(Response out, unsigned version, bool keep_alive, bool head) {
    http::response<http::string_body> res{http::status(out.status), version};
    set_common_headers(res);
    res.set(http::field::content_type, out.content_type);
    res.keep_alive(keep_alive);
    const size_t length = out.body.size();  // HEAD: the length GET would send, and no body
    if (!head) res.body() = std::move(out.body);
    res.content_length(length);
    hold_ = std::move(out.hold);
    reply(std::move(res), keep_alive);
  }

  http::response<http::string_body> error_response(int status, const std::string& message) {
    http::response<http::string_body> res{http::status(status), 11};
    set_common_headers(res);
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
                        self->res_.reset();  // the body's memory, and what it held, go now
                        self->hold_.reset();
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
  std::shared_ptr<const void> hold_;  // Response::hold of the answer being written
  uint64_t limit_ = 0;
  const Site& site_;
  const ServerOptions& o_;
  asio::thread_pool& slow_;
  std::shared_ptr<ConnectionCount::Slot> slot_;  // released with the session
};

// Raises the process's descriptor limit to what the system allows: every connection holds one,
// and so does every file the board's own work opens.
int raise_descriptor_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur == RLIM_INFINITY || r.rlim_cur > (1 << 20) ? 1 << 20 : int(r.rlim_cur);
}

}  // namespace

struct Server::Impl {
  Impl(const Site& s, const ServerOptions& o)
      : site(s), options(o),
        // At most half the descriptors for connections: the rest stay the board's own.
        connections(std::min(o.max_connections, raise_descriptor_limit() / 2),
                    o.max_connections_per_address),
        io(std::max(1, o.threads)), acceptor(io), retry(io),
        slow(size_t(std::max(1, o.slow_threads))) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (ec) {
        // Out of descriptors (or another accept failure): wait a little rather than spin.
        retry.expires_after(std::chrono::milliseconds(100));
        retry.async_wait([this](beast::error_code) { accept(); });
        return;
      }
      beast::error_code peer_ec;
      const auto peer = socket.remote_endpoint(peer_ec);
      if (auto slot = peer_ec ? nullptr : connections.take(peer.address()))
        std::make_shared<Session>(std::move(socket), site, options, slow, std::move(slot))->start();
      // Otherwise the socket closes here: over a limit, or already gone.
      accept();
    });
  }

  const Site& site;
  ServerOptions options;
  ConnectionCount connections;  // before io: sessions the io context still holds release into it
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::steady_timer retry;
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
