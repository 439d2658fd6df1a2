// The board's HTTP server (Boost.Beast, asynchronous): serves a Site on one address, with a
// limit on headers, bodies and connections and a timeout on every read and write, so a slow,
// oversized or many-times-connected client costs it little.
//
//   Server server(site, {"127.0.0.1", 8080});
//   std::thread t([&] { server.run(); });   // until stop()
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "board/site.h"

namespace wit::board {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: any free port (see Server::port)
  int threads = 2;       // serving requests
  int slow_threads = 2;  // long requests (Site::slow: a submission's audit), apart
  uint64_t max_body = 1 << 20;               // bytes; more is answered 413
  uint64_t max_piece = 16 << 20;             // bytes of one file piece (PUT /api/files/...)
  std::chrono::milliseconds timeout{30000};  // per read or write; then the connection closes
  // Connections open at once, in all and from one address; more are closed on arrival, so a
  // client holding many idle ones cannot take the descriptors the board's own work needs.
  int max_connections = 512;
  int max_connections_per_address = 32;
};

class Server {
 public:
  // Binds and listens; an address in use or unknown throws an Error naming it.
  Server(const Site& site, const ServerOptions& options);
  ~Server();
  uint16_t port() const;
  void run();   // serves until stop(), on options.threads threads
  void stop();  // from any thread
  // Stops when the process receives SIGINT or SIGTERM (whichever thread it reaches), after
  // calling `said(signal)`.
  void stop_on_interrupt(std::function<void(int)> said);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wit::board
