// What the board answers, independent of the network: a request (method, target, body) in, a
// response out. Pages are plain server-rendered HTML, readable without JavaScript; everything a
// page shows is also under /api/ as JSON.
//
//   GET /                    the tracks (HTML)          GET /api/tracks        the same (JSON)
//   GET /tracks/ID           one track (HTML)           GET /api/tracks/ID     the same (JSON)
//                                                       GET /api/me            the token's participant
//   POST /api/me/keys {"public_key", "proof"}      register a trainer key (board/participants.h)
//   GET /api/files/SHA256?size=N   begin (or look at) an upload: {"offset": bytes it holds}
//   PUT /api/files/SHA256?offset=O a piece at O; the last one is checked and publishes the file
//   GET /api/files/SHA256/content?offset=O  a published file's bytes from O (a piece of at
//                                  most 16 MiB; a shorter piece is the last; 503 while the
//                                  board sends as many pieces as it holds at once)
//   POST /api/entries              submit a run (board/entries.h): 201 and the entry with its receipt
//   GET /api/entries/ID            one entry, with its verification (board/jobs.h)
//   GET /entries/ID                the same (HTML)
//   GET /api/entries/ID/certificate         the board's signed certificate of a certified entry
//   GET /api/certificates/status            the signed list of withdrawn certificates
//   POST /api/entries/ID/challenges {"count": K}   K more segments drawn and replayed
//   POST /api/jobs/lease {"worker": NAME}          a verification job for the caller's worker
//   POST /api/jobs/ID/renew                        keep the lease
//   POST /api/jobs/ID/report {"passed", "detail", "seconds", "worker"}
//   POST /api/participants {"name": NAME, "admin": false}   (admin) a participant and its token
//   POST /api/participants/NAME/reinstate                   (admin) a revoked worker may work again
//
// Uploads are pieces of a file announced by hash and size (board/blob_store.h), so a broken
// connection resumes at the offset reached. Acting as a participant takes `Authorization: Bearer TOKEN` (board/participants.h); without a
// valid token such requests are 401.
// Unknown paths are 404, other methods 405; API errors are JSON {"error": "..."}.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "board/blob_store.h"
#include "board/db.h"
#include "board/entries.h"
#include "board/jobs.h"
#include "board/participants.h"
#include "board/track.h"
#include "board/worker.h"

namespace wit::board {

struct Request {
  std::string method;  // "GET", "HEAD", ...
  std::string target;  // path and query, as sent
  std::string body;
  std::string authorization;  // the Authorization header, if any
};

struct Response {
  Response() = default;
  Response(int status, std::string content_type, std::string body,
           std::shared_ptr<const void> hold = nullptr)
      : status(status), content_type(std::move(content_type)), body(std::move(body)),
        hold(std::move(hold)) {}
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  // Kept by the server until the answer is written or its connection ends (a download's slot
  // among those the board holds in memory at once).
  std::shared_ptr<const void> hold;
};

// How the board verifies what it takes in, and what one participant may leave unfinished.
struct SiteOptions {
  VerifyPolicy policy;
  Checks checks;        // run at submission (audit); the pool runs the replays
  Datasets datasets;    // the tracks' datasets
  std::filesystem::path work_dir;  // where runs are linked to be checked
  // Bytes of uploads a participant may have begun and not finished at once.
  uint64_t upload_quota = uint64_t(64) << 30;
  // How many uploads it may have begun and not finished (each is a row and a file).
  int64_t max_open_uploads = 64;
  // Bytes and files a participant may have uploaded, finished or not, that no entry uses yet:
  // a finished file counts until an entry of anyone's uses it.
  uint64_t unused_quota = uint64_t(4) << 40;
  int64_t max_unused_files = 4096;
  // An upload unfinished this long after it began stops counting against its participant, and
  // its bytes are dropped; a finished file no entry uses this long after its last announcement
  // leaves the store.
  int64_t upload_expiry_s = 7 * 24 * 3600;
  // Pieces of published files (16 MiB each) the board holds in memory at once, being sent;
  // past them a download is answered 503 and the client retries.
  int max_downloads = 16;
};

class Site {
 public:
  // `db` (migrated, board/participants.h) holds the participants, entries and jobs; the site
  // uses it from the server's threads one at a time. `key` signs receipts and certificates.
  Site(std::vector<Track> tracks, Db& db, BlobStore& files, const witness::SigningKey& key,
       SiteOptions verification);
  Response handle(const Request& r) const;
  // Requests that take long (a submission, audited before it is answered): the server runs
  // them apart from the others.
  bool slow(const Request& r) const;

 private:
  const Track* find(const std::string& id) const;
  std::optional<Participant> caller(const Request& r) const;
  Response file(const Request& r, const std::string& path) const;
  Response download(const Request& r, const std::string& hex) const;
  Response jobs(const Request& r, const std::string& path) const;
  Response participants(const Request& r, const std::string& path) const;
  Response register_key(const Request& r) const;
  Response entry_api(const Request& r, const std::string& path) const;
  Response entry_page(const std::string& id) const;
  Response track_page(const Track& t) const;
  nlohmann::json entry_with_verification(const std::string& id, bool full) const;
  // A track's entries in ranking order (board/pages.cpp): ranked ones by val loss, then
  // certified ones not yet ranked, then those being verified, then struck ones.
  nlohmann::json ranked_entries(const std::string& track) const;

  // One lock per upload being written: one upload's final hashing never holds up another.
  std::shared_ptr<std::mutex> upload_lock(const Digest& sha) const;
  // Under db_mutex_: charges a participant's announcement of a file (unfinished, or `published`
  // and in no entry yet) to its quotas; an error response when over a limit.
  std::optional<Response> charge_upload(const std::string& who, const std::string& hex,
                                        uint64_t size, bool published) const;
  // Under db_mutex_: uploads past their expiry end (all but `current`, whose lock the caller
  // holds); their unfinished bytes go, and a finished file no entry uses and no upload holds
  // leaves the store.
  void expire_uploads(const std::string& current) const;

  std::vector<Track> tracks_;
  Db& db_;
  BlobStore& files_;
  const witness::SigningKey& key_;
  SiteOptions v_;
  mutable std::atomic<int> downloads_{0};  // pieces being sent (SiteOptions::max_downloads)
  mutable std::mutex db_mutex_, upload_locks_mutex_;
  mutable std::map<Digest, std::weak_ptr<std::mutex>> upload_locks_;
};

// Text made safe for HTML: & < > " ' escaped.
std::string html_escape(const std::string& s);
// A whole page in the board's style, `body` being HTML already.
std::string page(const std::string& title, const std::string& body);

}  // namespace wit::board
