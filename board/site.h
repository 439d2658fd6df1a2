// What the board answers, independent of the network: a request (method, target, body) in, a
// response out. Pages are plain server-rendered HTML, readable without JavaScript; everything a
// page shows is also under /api/ as JSON.
//
//   GET /                    the tracks (HTML)          GET /api/tracks        the same (JSON)
//   GET /tracks/ID           one track (HTML)           GET /api/tracks/ID     the same (JSON)
//
// Unknown paths are 404, other methods 405; API errors are JSON {"error": "..."}.
#pragma once

#include <string>
#include <vector>

#include "board/track.h"

namespace wit::board {

struct Request {
  std::string method;  // "GET", "HEAD", ...
  std::string target;  // path and query, as sent
  std::string body;
};

struct Response {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

class Site {
 public:
  explicit Site(std::vector<Track> tracks);
  Response handle(const Request& r) const;

 private:
  const Track* find(const std::string& id) const;
  std::vector<Track> tracks_;
};

// Text made safe for HTML: & < > " ' escaped.
std::string html_escape(const std::string& s);

}  // namespace wit::board
