// The board's HTTP server on loopback: pages and API answers, HTML escaping of operator text,
// HEAD, and clients that send too much, send garbage or stall.
#include "board/server.h"
#include "board/participants.h"
#include "core/sha256.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "tests/data/temp_dir.h"
#include "verify/certificate.h"

namespace wit::board {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

std::vector<Track> test_tracks(const TempDir& dir) {
  const std::string hex(64, 'c');
  const auto file = dir.path() / "tracks.yaml";
  std::ofstream(file) << "tracks:\n"
                         "  - id: kjv-tiny\n"
                         "    title: \"Tiny <script>alert('x')</script> & more\"\n"
                         "    dataset: {manifest_root: " << hex << ", data_layout: " << hex
                      << ", tokenizer: byte}\n"
                         "    model: {family: gpt2, max_params: 4000000}\n"
                         "    budget: {max_tokens: 1000000}\n"
                         "    eval: {split: val, metric: loss, seq_len: 128, sequences: 64}\n";
  return load_tracks(file);
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = Db::open((dir_.path() / "board.sqlite").string());
    migrate(*db_);
    token_ = add_participant(*db_, "lab-a", false);
    files_ = std::make_unique<BlobStore>(dir_.path() / "files");
    site_ = std::make_unique<Site>(test_tracks(dir_), *db_, *files_, key_, options());
    ServerOptions o;
    o.port = 0;
    o.max_body = 1024;
    o.timeout = std::chrono::milliseconds(300);
    tune(o);
    server_ = std::make_unique<Server>(*site_, o);
    thread_ = std::thread([this] { server_->run(); });
  }
  virtual SiteOptions options() { return {}; }
  virtual void tune(ServerOptions&) {}
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  http::response<http::string_body> request(http::verb method, const std::string& target,
                                            const std::string& body = "",
                                            const std::string& token = "") {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.skip(method == http::verb::head);
    http::read(stream, buffer, parser);
    return parser.release();
  }
  // Sends raw bytes; returns everything the server sends back until it closes.
  std::string raw(const std::string& bytes, std::chrono::milliseconds pause = {}) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    beast::error_code ec;
    asio::write(s, asio::buffer(bytes), ec);  // the server may close before reading it all
    std::this_thread::sleep_for(pause);
    std::string out;
    char buf[4096];
    for (;;) {
      const size_t n = s.read_some(asio::buffer(buf), ec);
      if (ec) break;
      out.append(buf, n);
    }
    return out;
  }
  TempDir dir_;
  std::unique_ptr<Db> db_;
  std::string token_;
  std::unique_ptr<BlobStore> files_;
  witness::SigningKey key_ = witness::SigningKey::generate();
  std::unique_ptr<Site> site_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(ServerTest, TheApiListsTheTracksAndNamesAnUnknownOne) {
  auto res = request(http::verb::get, "/api/tracks");
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  const auto j = nlohmann::json::parse(res.body());
  ASSERT_EQ(j["tracks"].size(), 1u);
  EXPECT_EQ(j["tracks"][0]["id"], "kjv-tiny");
  EXPECT_EQ(j["tracks"][0]["budget"]["max_tokens"], 1000000);
  EXPECT_EQ(request(http::verb::get, "/api/tracks/kjv-tiny").result_int(), 200);
  res = request(http::verb::get, "/api/tracks/nope");
  EXPECT_EQ(res.result_int(), 404);
  EXPECT_EQ(nlohmann::json::parse(res.body())["error"], "no track 'nope'");
  res = request(http::verb::post, "/api/tracks", "{}");
  EXPECT_EQ(res.result_int(), 405);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "POST is not allowed"));
}

TEST_F(ServerTest, ATokenSaysWhoIsAsking) {
  auto res = request(http::verb::get, "/api/me");
  EXPECT_EQ(res.result_int(), 401);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "no token"));
  res = request(http::verb::get, "/api/me", "", "wit_" + std::string(64, '0'));
  EXPECT_EQ(res.result_int(), 401);
  EXPECT_EQ(nlohmann::json::parse(res.body())["error"], "unknown token");
  res = request(http::verb::get, "/api/me", "", token_);
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_EQ(nlohmann::json::parse(res.body())["name"], "lab-a");
}

TEST_F(ServerTest, AFileArrivesInPiecesAndIsKeptOnlyWhenItsHashMatches) {
  std::string file(100'000, '\0');
  for (size_t i = 0; i < file.size(); ++i) file[i] = char(i * 7 % 253);
  const std::string hex = to_hex(sha256(file));
  const std::string at = "/api/files/" + hex;
  EXPECT_EQ(request(http::verb::get, at + "?size=100000").result_int(), 401);
  auto res = request(http::verb::get, at + "?size=100000", "", token_);
  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(nlohmann::json::parse(res.body())["offset"], 0);
  res = request(http::verb::put, at + "?offset=0", file.substr(0, 60'000), token_);
  EXPECT_EQ(nlohmann::json::parse(res.body())["offset"], 60000);
  // The connection broke here; the client asks where the upload is and goes on.
  res = request(http::verb::get, at + "?size=100000", "", token_);
  EXPECT_EQ(nlohmann::json::parse(res.body())["offset"], 60000);
  res = request(http::verb::put, at + "?offset=50000", file.substr(50'000), token_);
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "has reached byte 60000"));
  res = request(http::verb::put, at + "?offset=60000", file.substr(60'000), token_);
  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_TRUE(nlohmann::json::parse(res.body())["complete"].get<bool>());
  EXPECT_TRUE(files_->has(sha256(file)));
  // A published file comes back in pieces, to participants only, once it belongs to an entry.
  const std::string content = at + "/content?offset=";
  EXPECT_EQ(request(http::verb::get, content + "0").result_int(), 401);
  res = request(http::verb::get, content + "0", "", token_);
  EXPECT_EQ(res.result_int(), 404);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "belongs to no entry"));
  db_->exec(
      "INSERT INTO board_entries (id, track, participant, name, head, steps, files, status, created, "
      "receipt) SELECT 'e1', 'kjv-tiny', id, 'x', 'h', 1, $1, 'verifying', 'now', '{}' FROM "
      "board_participants WHERE name = 'lab-a'",
      {nlohmann::json({{"witness.h5", hex}}).dump()});
  res = request(http::verb::get, content + "0", "", token_);
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), file);
  EXPECT_EQ(request(http::verb::get, content + "60000", "", token_).body(), file.substr(60'000));
  EXPECT_EQ(request(http::verb::get, content + "100000", "", token_).body(), "");
  EXPECT_EQ(request(http::verb::get, content + "100001", "", token_).result_int(), 400);
  EXPECT_EQ(request(http::verb::get, "/api/files/" + std::string(64, 'e') + "/content?offset=0", "", token_).result_int(), 404);
  // Bytes that are not the announced file: 422, nothing kept.
  const std::string other = "/api/files/" + to_hex(sha256(std::string("expected")));
  request(http::verb::get, other + "?size=8", "", token_);
  res = request(http::verb::put, other + "?offset=0", "tampered", token_);
  EXPECT_EQ(res.result_int(), 422);
  EXPECT_FALSE(files_->has(sha256(std::string("expected"))));
  EXPECT_EQ(request(http::verb::get, "/api/files/../../etc/passwd?size=1", "", token_).result_int(), 400);
  // A piece over the 16 MiB limit is refused as soon as its length is declared.
  const std::string reply = raw("PUT " + at + "?offset=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                token_ + "\r\nContent-Length: " + std::to_string(17 << 20) + "\r\n\r\n");
  EXPECT_TRUE(contains(reply, "413")) << reply.substr(0, 200);
  EXPECT_TRUE(contains(reply, "limit of 16777216 bytes"));
}

TEST_F(ServerTest, AnOperatorAddsParticipantsAndReinstatesWorkers) {
  const std::string body = R"({"name": "lab-z"})";
  EXPECT_EQ(request(http::verb::post, "/api/participants", body).result_int(), 401);
  auto res = request(http::verb::post, "/api/participants", body, token_);
  EXPECT_EQ(res.result_int(), 403);  // a participant's token is no operator's
  const std::string admin = add_participant(*db_, "operator", true);
  res = request(http::verb::post, "/api/participants", body, admin);
  ASSERT_EQ(res.result_int(), 201) << res.body();
  const std::string token = nlohmann::json::parse(res.body())["token"];
  res = request(http::verb::get, "/api/me", "", token);
  EXPECT_EQ(nlohmann::json::parse(res.body())["name"], "lab-z");
  EXPECT_EQ(request(http::verb::post, "/api/participants", body, admin).result_int(), 400);  // taken
  // Reinstating: only a revoked worker, only by an operator.
  const std::string id = db_->query("SELECT id FROM board_participants WHERE name = 'lab-z'").at(0).text(0);
  EXPECT_EQ(request(http::verb::post, "/api/participants/lab-z/reinstate", "", admin).result_int(), 400);
  db_->exec("INSERT INTO board_revoked (participant, reason, created) VALUES ($1, 'test', 'now')", {id});
  EXPECT_EQ(request(http::verb::post, "/api/jobs/lease", "{}", token).result_int(), 403);
  EXPECT_EQ(request(http::verb::post, "/api/participants/lab-z/reinstate", "", token).result_int(), 403);
  EXPECT_EQ(request(http::verb::post, "/api/participants/nobody/reinstate", "", admin).result_int(), 404);
  EXPECT_EQ(request(http::verb::post, "/api/participants/lab-z/reinstate", "", admin).result_int(), 200);
  EXPECT_EQ(request(http::verb::post, "/api/jobs/lease", "{}", token).result_int(), 200);
}

// Every answer forbids sniffing and framing, and a page may load and run nothing.
TEST_F(ServerTest, AnswersCarryHeadersThatKeepBrowsersSafe) {
  for (const std::string target : {"/", "/api/tracks", "/nowhere"}) {
    const auto res = request(http::verb::get, target);
    EXPECT_EQ(res["X-Content-Type-Options"], "nosniff") << target;
    EXPECT_EQ(res["X-Frame-Options"], "DENY") << target;
    EXPECT_TRUE(contains(std::string(res["Content-Security-Policy"]), "default-src 'none'")) << target;
  }
}

class ConnectionLimitTest : public ServerTest {
  void tune(ServerOptions& o) override { o.max_connections_per_address = 2; }
};

// A client holding connections open cannot take every descriptor of the board: past its share
// a new connection is closed on arrival, and one slot freed lets it in again.
TEST_F(ConnectionLimitTest, OneAddressHoldsAtMostItsShareOfConnections) {
  asio::io_context io;
  const tcp::endpoint at(asio::ip::make_address("127.0.0.1"), server_->port());
  std::vector<std::unique_ptr<tcp::socket>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<tcp::socket>(io));
    held.back()->connect(at);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // both accepted
  // The third is closed at once: no answer, whatever it sends.
  EXPECT_EQ(raw("GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n"), "");
  held.pop_back();
  bool answered = false;
  for (int i = 0; i < 40 && !answered; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // until the server saw the close
    answered = contains(raw("GET /api/tracks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), "200 OK");
  }
  EXPECT_TRUE(answered);
}

class DownloadLimitTest : public ServerTest {
  SiteOptions options() override {
    SiteOptions o;
    o.max_downloads = 1;
    return o;
  }
  void tune(ServerOptions& o) override { o.timeout = std::chrono::seconds(5); }
};

// A piece being sent stays in the board's memory until the client reads it: past the pieces the
// board holds at once a download is 503, and a slot comes back when its client goes.
TEST_F(DownloadLimitTest, PiecesInMemoryAreBoundedHoweverManyClientsStall) {
  const std::string file((16 << 20) + 5, 'x');  // more than loopback's socket buffers hold
  const Digest sha = sha256(file);
  files_->begin(sha, file.size());
  files_->append(sha, 0, file.data(), file.size());
  files_->finish(sha);
  const std::string hex = to_hex(sha);
  db_->exec(
      "INSERT INTO board_entries (id, track, participant, name, head, steps, files, status, created, "
      "receipt) SELECT 'e1', 'kjv-tiny', id, 'x', 'h', 1, $1, 'verifying', 'now', '{}' FROM "
      "board_participants WHERE name = 'lab-a'",
      {nlohmann::json({{"witness.h5", hex}}).dump()});
  const std::string target = "/api/files/" + hex + "/content?offset=0";

  asio::io_context io;
  auto stalled = std::make_unique<tcp::socket>(io);
  stalled->connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
  asio::write(*stalled, asio::buffer("GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                     token_ + "\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it is being sent, unread
  auto res = request(http::verb::get, target, "", token_);
  EXPECT_EQ(res.result_int(), 503);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "ask again shortly")) << res.body();
  stalled.reset();  // the stalled client goes: its slot comes back
  int status = 0;
  for (int i = 0; i < 50 && status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    status = request(http::verb::get, target, "", token_).result_int();
  }
  EXPECT_EQ(status, 200);
}

class QuotaTest : public ServerTest {
  SiteOptions options() override {
    SiteOptions o;
    o.upload_quota = 250'000;
    o.max_open_uploads = 3;
    o.unused_quota = 300'000;
    o.max_unused_files = 4;
    return o;
  }
};

TEST_F(QuotaTest, AParticipantsUnfinishedUploadsAreBounded) {
  const std::string a = to_hex(sha256(std::string("a"))), b = to_hex(sha256(std::string("b")));
  EXPECT_EQ(request(http::verb::get, "/api/files/" + a + "?size=200000", "", token_).result_int(), 200);
  // Asking again about the same upload does not count it twice.
  EXPECT_EQ(request(http::verb::get, "/api/files/" + a + "?size=200000", "", token_).result_int(), 200);
  auto res = request(http::verb::get, "/api/files/" + b + "?size=100000", "", token_);
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "quota of 250000 per participant"));
  // Another participant has a quota of its own.
  const std::string other = add_participant(*db_, "lab-b", false);
  EXPECT_EQ(request(http::verb::get, "/api/files/" + b + "?size=100000", "", other).result_int(), 200);
  // A finished upload no longer counts.
  const std::string small = "tiny file";
  const std::string c = to_hex(sha256(small));
  EXPECT_EQ(request(http::verb::get, "/api/files/" + c + "?size=9", "", token_).result_int(), 200);
  EXPECT_EQ(request(http::verb::put, "/api/files/" + c + "?offset=0", small, token_).result_int(), 200);
  EXPECT_EQ(request(http::verb::get, "/api/files/" + c + "?size=9", "", token_).result_int(), 200);
}

// Each unfinished upload is a row and a file, whatever its size: their number is bounded too,
// and one left unfinished for days stops counting and loses its bytes.
TEST_F(QuotaTest, UnfinishedUploadsAreBoundedInNumberAndExpire) {
  std::vector<std::string> shas;
  for (int i = 0; i < 4; ++i) shas.push_back(to_hex(sha256("upload " + std::to_string(i))));
  auto begin = [&](const std::string& sha, const std::string& token) {
    return request(http::verb::get, "/api/files/" + sha + "?size=10", "", token);
  };
  for (int i = 0; i < 3; ++i) ASSERT_EQ(begin(shas[i], token_).result_int(), 200);
  EXPECT_EQ(request(http::verb::put, "/api/files/" + shas[0] + "?offset=0", "12345", token_).result_int(), 200);
  auto res = begin(shas[3], token_);
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "you have 3 unfinished uploads"))
      << res.body();
  EXPECT_EQ(begin(shas[1], token_).result_int(), 200);  // one already begun may be resumed

  // The first began long ago: it no longer counts, and its bytes go.
  const std::string me = db_->query("SELECT id FROM board_participants WHERE name = 'lab-a'").at(0).text(0);
  const Digest first = digest_from_hex(shas[0], "sha");
  EXPECT_EQ(files_->announced_size(first, me), 10u);
  db_->exec("UPDATE board_uploads SET began = '2000-01-01T00:00:00Z' WHERE sha256 = $1", {shas[0]});
  EXPECT_EQ(begin(shas[3], token_).result_int(), 200);
  EXPECT_TRUE(contains(error_of([&] { files_->announced_size(first, me); }), "no upload of this file was begun"));
}

// A finished file is the board's disk too: it counts against its uploader until an entry uses
// it, and one no entry used for days leaves the store once nobody's announcement holds it.
// (Else uploading and finishing file after file would fill the board's disk.)
TEST_F(QuotaTest, FinishedFilesNoEntryUsesCountUntilTheyExpire) {
  auto begin = [&](const std::string& content, const std::string& token) {
    return request(http::verb::get, "/api/files/" + to_hex(sha256(content)) + "?size=" + std::to_string(content.size()), "", token);
  };
  auto upload = [&](const std::string& content) {
    ASSERT_EQ(begin(content, token_).result_int(), 200);
    auto res = request(http::verb::put, "/api/files/" + to_hex(sha256(content)) + "?offset=0", content, token_);
    ASSERT_EQ(res.result_int(), 200) << res.body();
    ASSERT_TRUE(nlohmann::json::parse(res.body())["complete"].get<bool>());
  };
  const std::string f1(150'000, '1'), f2(150'000, '2'), f3 = "3";
  upload(f1);
  upload(f2);
  auto res = begin(f3, token_);
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"],
                       "files that no entry uses yet would hold 300001 bytes, over this board's quota of 300000"))
      << res.body();

  // An entry using f2 frees its share (its submission drops the upload rows; here by hand, with
  // the entry row a submission writes).
  const std::string h1 = to_hex(sha256(f1)), h2 = to_hex(sha256(f2));
  db_->exec(
      "INSERT INTO board_entries (id, track, participant, name, head, steps, files, status, created, "
      "receipt) SELECT 'e1', 'kjv-tiny', id, 'x', 'h', 1, $1, 'verifying', 'now', '{}' FROM "
      "board_participants WHERE name = 'lab-a'",
      {nlohmann::json({{"witness.h5", h2}}).dump()});
  db_->exec("DELETE FROM board_uploads WHERE sha256 = $1", {h2});
  EXPECT_EQ(begin(f3, token_).result_int(), 200);

  // Another participant announcing f1 holds it too; it stays until neither does.
  const std::string rival = add_participant(*db_, "lab-r", false);
  res = begin(f1, rival);
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_TRUE(nlohmann::json::parse(res.body())["complete"].get<bool>());
  db_->exec("UPDATE board_uploads SET began = '2000-01-01T00:00:00Z' WHERE sha256 = $1 AND participant = "
            "(SELECT id FROM board_participants WHERE name = 'lab-a')", {h1});
  EXPECT_EQ(begin(f3, token_).result_int(), 200);  // any announcement sweeps expired uploads
  EXPECT_TRUE(files_->has(sha256(f1)));
  db_->exec("UPDATE board_uploads SET began = '2000-01-01T00:00:00Z' WHERE sha256 = $1", {h1});
  EXPECT_EQ(begin(f3, token_).result_int(), 200);
  EXPECT_FALSE(files_->has(sha256(f1)));
  // A file an entry uses never leaves, however old its upload rows.
  db_->exec("INSERT INTO board_uploads (sha256, participant, size, began) SELECT $1, id, 150000, "
            "'2000-01-01T00:00:00Z' FROM board_participants WHERE name = 'lab-r'", {h2});
  EXPECT_EQ(begin(f3, token_).result_int(), 200);
  EXPECT_TRUE(files_->has(sha256(f2)));

  // Their number is bounded too (each is a row and a file): f3 and three more, then no fifth.
  for (const std::string c : {"4", "5"}) upload(c);
  upload(f3);
  res = begin("6", token_);
  EXPECT_EQ(res.result_int(), 200) << res.body();  // 3 in no entry, and this one makes 4
  res = begin("7", token_);
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_TRUE(contains(nlohmann::json::parse(res.body())["error"], "you have 4 uploaded files no entry uses yet"))
      << res.body();

  // Announcing a finished file again keeps it 7 days from then; left alone, it goes.
  const std::string h3 = to_hex(sha256(f3));
  db_->exec("UPDATE board_uploads SET began = '2000-01-01T00:00:00Z' WHERE sha256 = $1", {h3});
  EXPECT_EQ(begin(f3, token_).result_int(), 200);
  EXPECT_EQ(begin("7", token_).result_int(), 413);  // f3 is still held: 4 files
  EXPECT_TRUE(files_->has(sha256(f3)));
  db_->exec("UPDATE board_uploads SET began = '2000-01-01T00:00:00Z' WHERE sha256 = $1", {h3});
  EXPECT_EQ(begin("7", token_).result_int(), 200);
  EXPECT_FALSE(files_->has(sha256(f3)));
}

// An upload whose bytes failed their hash may be announced again with another size: the quota
// counts the new one (else one byte announced first would let a file of any size through).
TEST_F(QuotaTest, AReAnnouncedUploadCountsItsNewSize) {
  const std::string a = to_hex(sha256(std::string("re-announced"))), b = to_hex(sha256(std::string("b")));
  EXPECT_EQ(request(http::verb::get, "/api/files/" + a + "?size=1", "", token_).result_int(), 200);
  EXPECT_EQ(request(http::verb::put, "/api/files/" + a + "?offset=0", "x", token_).result_int(), 422);
  EXPECT_EQ(request(http::verb::get, "/api/files/" + a + "?size=200000", "", token_).result_int(), 200);
  EXPECT_EQ(request(http::verb::get, "/api/files/" + b + "?size=100000", "", token_).result_int(), 413);
}

// Unfinished uploads are each participant's own: announcing another's file with a wrong size,
// or appending junk to it, spoils nothing of theirs.
TEST_F(QuotaTest, NobodySpoilsAnothersUpload) {
  const std::string content = "a file a participant uploads";
  const std::string sha = to_hex(sha256(content));
  const std::string rival = add_participant(*db_, "lab-r", false);
  EXPECT_EQ(request(http::verb::get, "/api/files/" + sha + "?size=1", "", rival).result_int(), 200);
  EXPECT_EQ(request(http::verb::put, "/api/files/" + sha + "?offset=0", "x", rival).result_int(), 422);
  auto res = request(http::verb::get, "/api/files/" + sha + "?size=" + std::to_string(content.size()), "", token_);
  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(nlohmann::json::parse(res.body())["offset"], 0);
  EXPECT_EQ(request(http::verb::put, "/api/files/" + sha + "?offset=0", content.substr(0, 6), token_).result_int(), 200);
  // The rival announces the true size too and sends junk at where the owner is: its own copy.
  EXPECT_EQ(request(http::verb::get, "/api/files/" + sha + "?size=" + std::to_string(content.size()), "", rival).result_int(), 200);
  EXPECT_EQ(request(http::verb::put, "/api/files/" + sha + "?offset=6", "junk", rival).result_int(), 400);
  res = request(http::verb::put, "/api/files/" + sha + "?offset=6", content.substr(6), token_);
  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(nlohmann::json::parse(res.body())["complete"], true);
  EXPECT_TRUE(files_->has(digest_from_hex(sha, "sha")));
}

TEST_F(ServerTest, ASubmissionIsCheckedBeforeAnythingIsRecorded) {
  auto post = [&](const std::string& body, const std::string& token) {
    return request(http::verb::post, "/api/entries", body, token);
  };
  EXPECT_EQ(post("{}", "").result_int(), 401);
  auto error = [&](const std::string& body) {
    const auto res = post(body, token_);
    EXPECT_EQ(res.result_int(), 400) << body;
    return nlohmann::json::parse(res.body())["error"].get<std::string>();
  };
  EXPECT_TRUE(contains(error("{not json"), "not JSON"));
  EXPECT_TRUE(contains(error(R"({"track": "kjv-tiny"})"), "no string 'name'"));
  const std::string sha(64, 'a');
  const std::string files = R"("files": {"witness.h5": ")" + sha + R"(", "config.yaml": ")" + sha +
                            R"(", "model.safetensors": ")" + sha + R"("})";
  EXPECT_TRUE(contains(error(R"({"track": "nope", "name": "a", )" + files + "}"), "no track 'nope'"));
  EXPECT_TRUE(contains(error(R"({"track": "kjv-tiny", "name": "a", )" + files + "}"),
                       "witness.h5 (aaaaaaaaaaaaaaaa) has not been uploaded"));
  EXPECT_TRUE(contains(error(R"({"track": "kjv-tiny", "name": "a", "files": {"../x": ")" + sha + "\"}}"),
                       "file '../x'"));
  // Uploaded files that are not a witness log.
  const std::string junk = "not an HDF5 file";
  const std::string junk_sha = to_hex(sha256(junk));
  request(http::verb::get, "/api/files/" + junk_sha + "?size=" + std::to_string(junk.size()), "", token_);
  request(http::verb::put, "/api/files/" + junk_sha + "?offset=0", junk, token_);
  const std::string as_log = R"("files": {"witness.h5": ")" + junk_sha + R"(", "config.yaml": ")" +
                             junk_sha + R"(", "model.safetensors": ")" + junk_sha + R"("})";
  EXPECT_TRUE(contains(error(R"({"track": "kjv-tiny", "name": "a", )" + as_log + "}"),
                       "witness.h5 is not a witness log"));
  EXPECT_EQ(db_->query("SELECT id FROM board_entries").size(), 0u);
  EXPECT_EQ(request(http::verb::get, "/api/entries/none").result_int(), 404);
}

TEST_F(ServerTest, ATrainerKeyIsRegisteredOnlyWithItsSignatureOfTheBoardsClaim) {
  auto post = [&](const nlohmann::json& body, const std::string& token) {
    return request(http::verb::post, "/api/me/keys", body.dump(), token);
  };
  EXPECT_EQ(post({}, "").result_int(), 401);
  EXPECT_EQ(post({{"public_key", "ab"}}, token_).result_int(), 400);
  const auto me = nlohmann::json::parse(request(http::verb::get, "/api/me", "", token_).body());
  ASSERT_EQ(me["board_key"], to_hex(key_.public_key().data(), 32));
  EXPECT_TRUE(me["trainer_keys"].empty());
  const witness::SigningKey trainer = witness::SigningKey::generate();
  const std::string key_hex = to_hex(trainer.public_key().data(), 32);
  auto proof = [&](const witness::PublicKey& board, const std::string& participant) {
    const witness::Signature s = trainer.sign(trainer_key_claim(board, participant));
    return to_hex(s.data(), s.size());
  };
  // Someone holding only the public key (it is in every log it signed) cannot register it.
  auto res = post({{"public_key", key_hex}, {"proof", std::string(128, '0')}}, token_);
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_TRUE(contains(res.body(), "is not trainer key")) << res.body();
  // A proof made for another board, or for another participant, does not carry over.
  res = post({{"public_key", key_hex}, {"proof", proof(witness::SigningKey::generate().public_key(), me["id"])}}, token_);
  EXPECT_EQ(res.result_int(), 400);
  const std::string other = add_participant(*db_, "lab-b", false);
  res = post({{"public_key", key_hex}, {"proof", proof(key_.public_key(), me["id"])}}, other);
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_TRUE(nlohmann::json::parse(request(http::verb::get, "/api/me", "", other).body())["trainer_keys"].empty());
  // The holder registers it (twice is harmless).
  for (int i = 0; i < 2; ++i) {
    res = post({{"public_key", key_hex}, {"proof", proof(key_.public_key(), me["id"])}}, token_);
    ASSERT_EQ(res.result_int(), 200) << res.body();
  }
  EXPECT_EQ(nlohmann::json::parse(res.body())["key_id"], witness::key_id(trainer.public_key()));
  EXPECT_EQ(nlohmann::json::parse(request(http::verb::get, "/api/me", "", token_).body())["trainer_keys"],
            nlohmann::json::array({key_hex}));
  EXPECT_TRUE(has_trainer_key(*db_, me["id"], trainer.public_key()));
}

TEST_F(ServerTest, TheStatusListIsPublicAndSignedByTheBoard) {
  const auto res = request(http::verb::get, "/api/certificates/status");
  ASSERT_EQ(res.result_int(), 200);
  const auto list = nlohmann::json::parse(res.body());
  EXPECT_TRUE(list["withdrawn"].empty());
  const nlohmann::json certificate = {{"id", "0123"}, {"verified_at", "2001-01-01T00:00:00Z"}};
  const witness::CertificateStatus st = witness::certificate_status(certificate, list, key_.public_key());
  EXPECT_EQ(st.problem, "");
  EXPECT_TRUE(st.withdrawn.is_null());
  EXPECT_TRUE(contains(witness::certificate_status(certificate, list, witness::SigningKey::generate().public_key()).problem,
                       "not signed by the certificate's verifier key"));
}

TEST_F(ServerTest, PagesAreHtmlWithTheOperatorsTextEscaped) {
  auto res = request(http::verb::get, "/");
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_TRUE(contains(res.body(), "<a href=\"/tracks/kjv-tiny\">kjv-tiny</a>"));
  EXPECT_TRUE(contains(res.body(), "Tiny &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more"));
  EXPECT_FALSE(contains(res.body(), "<script>"));
  res = request(http::verb::get, "/tracks/kjv-tiny");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_TRUE(contains(res.body(), "at most 1,000,000 training tokens"));
  EXPECT_EQ(request(http::verb::get, "/tracks/../etc/passwd").result_int(), 404);
  const auto get = request(http::verb::get, "/");
  const auto head = request(http::verb::head, "/");
  EXPECT_EQ(head.result_int(), 200);
  EXPECT_EQ(head[http::field::content_length], std::to_string(get.body().size()));
}

TEST_F(ServerTest, TooMuchGarbageOrAStallEndsTheConnection) {
  const std::string big = "POST /api/tracks HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                          std::string(100000, 'x');
  const std::string a = raw(big);
  EXPECT_TRUE(contains(a, "413")) << a.substr(0, 200);
  EXPECT_TRUE(contains(a, "over this board's limit of 1024 bytes"));
  const std::string b = raw("GARBAGE\r\n\r\n");
  EXPECT_TRUE(contains(b, "400")) << b.substr(0, 200);
  // Half a request, then silence: the server closes after its timeout (300 ms here), unanswered.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(raw("GET / HTTP/1.1\r\nHost: x\r\n"), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // And it still serves others.
  EXPECT_EQ(request(http::verb::get, "/api/tracks").result_int(), 200);
}

TEST_F(ServerTest, AnAddressInUseIsNamed) {
  ServerOptions o;
  o.port = server_->port();
  EXPECT_TRUE(contains(error_of([&] { Server again(*site_, o); }),
                       fmt::format("cannot listen on 127.0.0.1:{}", o.port)));
}

}  // namespace
}  // namespace wit::board
