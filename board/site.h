// What the board answers, independent of the network: a request (method, target, body) in, a
// response out. Pages are plain server-rendered HTML, readable without JavaScript; everything a
// page shows is also under /api/ as JSON.
//
//   GET /                    the tracks (HTML)          GET /api/tracks        the same (JSON)
//   GET /tracks/ID           one track (HTML)           GET /api/tracks/ID     the same (JSON)
//                                                       GET /api/me            the token's participant
//   GET /api/files/SHA256?size=N   begin (or look at) an upload: {"offset": bytes it holds}
//   PUT /api/files/SHA256?offset=O a piece at O; the last one is checked and publishes the file
//   POST /api/entries              submit a run (board/entries.h): 201 and the entry with its receipt
//   GET /api/entries/ID            one entry
//
// Uploads are pieces of a file announced by hash and size (board/blob_store.h), so a broken
// connection resumes at the offset reached. Acting as a participant takes `Authorization: Bearer TOKEN` (board/participants.h); without a
// valid token such requests are 401.
// Unknown paths are 404, other methods 405; API errors are JSON {"error": "..."}.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "board/blob_store.h"
#include "board/db.h"
#include "board/entries.h"
#include "board/participants.h"
#include "board/track.h"

namespace wit::board {

struct Request {
  std::string method;  // "GET", "HEAD", ...
  std::string target;  // path and query, as sent
  std::string body;
  std::string authorization;  // the Authorization header, if any
};

struct Response {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

class Site {
 public:
  // `db` (migrated, board/participants.h) holds the participants; the site uses it from the
  // server's threads one at a time.
  // `key` signs the receipts of entries.
  Site(std::vector<Track> tracks, Db& db, BlobStore& files, const witness::SigningKey& key);
  Response handle(const Request& r) const;

 private:
  const Track* find(const std::string& id) const;
  std::optional<Participant> caller(const Request& r) const;
  Response file(const Request& r, const std::string& path) const;
  std::vector<Track> tracks_;
  Db& db_;
  BlobStore& files_;
  const witness::SigningKey& key_;
  mutable std::mutex db_mutex_, files_mutex_;
};

// Text made safe for HTML: & < > " ' escaped.
std::string html_escape(const std::string& s);

}  // namespace wit::board
