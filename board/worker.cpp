#include "board/worker.h"

#include <fmt/format.h>

#include <chrono>
#include <unistd.h>

#include "board/ids.h"
#include "core/error.h"

namespace wit::board {

namespace fs = std::filesystem;

void Datasets::add(const std::string& manifest_root, const std::string& data_layout,
                   const fs::path& dir) {
  dirs_[manifest_root + "/" + data_layout] = dir;
}

std::optional<fs::path> Datasets::find(const std::string& manifest_root,
                                       const std::string& data_layout) const {
  const auto it = dirs_.find(manifest_root + "/" + data_layout);
  if (it == dirs_.end()) return std::nullopt;
  return it->second;
}

void link_run(const BlobStore& store, const std::map<std::string, std::string>& files,
              const fs::path& dir) {
  fs::create_directories(dir / "checkpoints");
  for (const auto& [name, sha] : files) {
    // Names were checked at submission (board/entries.cpp); checked again, as they become paths.
    if (name.find("..") != std::string::npos || name.empty() || name[0] == '/')
      fail("run file name '{}' is not a name a run holds", name);
    const auto path = store.path_of(digest_from_hex(sha, name));
    if (!path) fail("{} ({}) is not in the file store", name, sha.substr(0, 16));
    fs::create_symlink(fs::absolute(*path), dir / name);
  }
}

LocalPool::LocalPool(std::string db_where, VerifyPolicy policy, const witness::SigningKey& key,
                     BlobStore& store, Datasets datasets, Checks checks, fs::path work_dir,
                     int threads, std::function<void(const std::string&)> log)
    : db_where_(std::move(db_where)),
      policy_(policy),
      key_(key),
      store_(store),
      datasets_(std::move(datasets)),
      checks_(std::move(checks)),
      work_dir_(std::move(work_dir)),
      log_(std::move(log)) {
  fs::create_directories(work_dir_);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this, i] { run(i); });
}

LocalPool::~LocalPool() { stop(); }

void LocalPool::stop() {
  stop_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void LocalPool::run(int index) {
  // Several servers may share one database: the pid tells their pools apart.
  const std::string worker = fmt::format("board pool {} (pid {})", index, ::getpid());
  std::unique_ptr<Db> db;
  auto idle = [&](int ms) {
    for (int waited = 0; waited < ms && !stop_; waited += 100)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  while (!stop_) {
    try {
      if (!db) db = Db::open(db_where_);
      JobQueue q(*db, policy_, key_);
      const std::optional<Job> job = q.lease(kBoardWorker);
      if (!job) {
        idle(500);
        continue;
      }
      const auto data = datasets_.find(job->manifest_root, job->data_layout);
      if (!data) {
        log_(fmt::format("{}: job {} of entry {}: this board holds no copy of dataset {}; the "
                         "lease will expire",
                         worker, job->id, job->entry, job->manifest_root.substr(0, 16)));
        idle(5000);
        continue;
      }
      const fs::path dir = work_dir_ / fmt::format("{}-{}", job->id, random_hex(4));
      ReplayResult r;
      try {
        link_run(store_, job->files, dir);
        const auto start = std::chrono::steady_clock::now();
        r = checks_.replay(dir, *data, job->segment, job->probe_step);
        r.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      } catch (...) {
        std::error_code ec;
        fs::remove_all(dir, ec);
        throw;
      }
      fs::remove_all(dir);
      q.report(job->id, kBoardWorker, worker, r);
      log_(fmt::format("{}: entry {} {}: {} ({:.1f} s)", worker, job->entry,
                       job->segment == kFinalSegment ? std::string("final checks")
                                                     : fmt::format("segment {}", job->segment),
                       r.passed ? "passed" : "FAILED: " + r.detail, r.seconds));
    } catch (const std::exception& e) {
      // The board's own trouble (database, files), not a verdict: the lease expires and the job
      // returns to the queue.
      log_(fmt::format("{}: {}", worker, e.what()));
      db.reset();
      idle(2000);
    }
  }
}

}  // namespace wit::board
