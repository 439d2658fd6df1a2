// The board's verification with the trainer's own code: the checks a board runs at submission
// and in its pool, and `wit board worker`, which replays jobs for a board from another machine.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <csignal>
#include <thread>
#include <unistd.h>

#include "apps/wit/board.h"
#include "apps/wit/board_checks.h"
#include "board/client.h"
#include "board/ids.h"
#include "core/error.h"
#include "trainer/data/dataset.h"
#include "trainer/data/manifest.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/mpi_communicator.h"
#include "verify/verify.h"

namespace wit::cli {

namespace fs = std::filesystem;

namespace {

// One verify_run over `comm`, as a job's result: passed when every stage run passed.
board::ReplayResult run_checks(const fs::path& run, const fs::path& data,
                               std::optional<int64_t> segment, bool final_checks,
                               dist::Communicator& comm, int64_t probe_step = -1) {
  witness::VerifyOptions o;
  if (probe_step >= 0) o.probe_after_step = uint64_t(probe_step);
  o.run = run;
  o.data = data;
  o.segments = std::vector<uint64_t>{};
  if (segment && *segment >= 0) o.segments->push_back(uint64_t(*segment));
  o.final_checks = final_checks;
  // The audit at submission reads every checkpoint whole: the board serves these files to every
  // worker and certifies their availability. A job samples leaves and loads only what it replays.
  o.whole_checkpoints = !segment;
  const witness::VerifyReport r = witness::verify_run(o, comm, [](const std::string&) {});
  if (r.outcome == witness::Outcome::NotReproducible)
    fail("the run cannot be certified: {}", r.reason);
  // At submission, files that do not match the log (a checkpoint of another run, a corrupt
  // one) are the submitter's mistake or trick, refused with nothing recorded; a log whose data
  // the audit contradicts is recorded and struck.
  if (!segment)
    for (const auto& s : r.stages)
      if (s.name == "structure" && !s.passed) fail("the run's files do not match its log: {}", s.detail);
  board::ReplayResult out;
  out.passed = r.outcome == witness::Outcome::Certified;
  if (r.probe_state) out.evidence = to_hex(*r.probe_state);
  // The audit checked every record of the board's dataset: how they name documents goes into
  // the board's certificate, as into wit verify's, for query proofs checked against it.
  if (!segment && out.passed && !r.dataset_tokenizer.empty())
    out.dataset = {{"tokenizer", r.dataset_tokenizer},
                   {"tokens_in_no_document", r.tokens_in_no_document}};
  if (!out.passed) {
    out.detail = r.reason;
  } else {
    // What this job checked: the audit's two stages, a segment's replay, or the final checks.
    std::vector<std::string> parts;
    for (const auto& s : r.stages) {
      const bool audit_stage = s.name == "structure" || s.name == "data";
      const bool wanted = !segment ? audit_stage
                          : *segment >= 0 ? s.name == "challenges"
                                          : s.name == "model" || s.name == "evaluation";
      if (wanted) parts.push_back(s.name + ": " + s.detail);
    }
    out.detail = fmt::format("{}", fmt::join(parts, "; "));
  }
  return out;
}

std::atomic<bool> g_stop{false};

}  // namespace

board::Checks replay_checks() {
  board::Checks c;
  c.audit = [](const fs::path& run, const fs::path& data) {
    auto comm = dist::make_single_process();
    return run_checks(run, data, std::nullopt, false, *comm);
  };
  c.replay = [](const fs::path& run, const fs::path& data, int64_t segment, int64_t probe) {
    auto comm = dist::make_single_process();
    return run_checks(run, data, segment, segment == board::kFinalSegment, *comm, probe);
  };
  return c;
}

board::Datasets index_datasets(const std::vector<fs::path>& dirs) {
  board::Datasets out;
  for (const fs::path& dir : dirs) {
    const data::Dataset d = data::Dataset::open(dir);
    out.add(to_hex(d.manifest().root), to_hex(data::layout_digest(d.manifest())), fs::absolute(dir));
  }
  return out;
}

namespace {

// Renews a job's lease on a thread of its own while the job is replayed (rank 0).
class LeaseKeeper {
 public:
  LeaseKeeper(board::Client& client, const board::Job& job) {
    const auto period = std::chrono::milliseconds(
        std::max<int64_t>(1000, (job.lease_expires_ms - board::now_ms()) / 3));
    thread_ = std::thread([this, &client, id = job.id, period] {
      std::unique_lock<std::mutex> lock(m_);
      while (!cv_.wait_for(lock, period, [&] { return finished_; })) {
        try {
          client.call("POST", fmt::format("/api/jobs/{}/renew", id));
        } catch (const std::exception& e) {
          fmt::print("job {}: renewing the lease: {}\n", id, e.what());
        }
      }
    });
  }
  ~LeaseKeeper() {
    {
      std::lock_guard<std::mutex> lock(m_);
      finished_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread thread_;
};

// `wit board worker` on every rank of its job: rank 0 leases jobs and fetches their files, every
// rank replays, rank 0 reports.
class Worker {
 public:
  Worker(const BoardWorkerOptions& o, dist::Communicator& comm, const std::string& token)
      : o_(o),
        comm_(comm),
        root_(comm.is_root()),
        datasets_(index_datasets(o.datasets)),
        client_(o.server, token),
        cache_(o.cache) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    name_ = o.name.empty() ? fmt::format("{} pid {}", host, ::getpid()) : o.name;
  }

  int run();

 private:
  void say(const std::string& line) const {
    if (!root_) return;
    fmt::print("{}\n", line);
    std::fflush(stdout);
  }
  // Rank 0's text on every rank.
  std::string share(std::string text) {
    uint64_t n = text.size();
    comm_.broadcast(&n, sizeof n, 0);
    text.resize(n);
    comm_.broadcast(text.data(), n, 0);
    return text;
  }
  void greet();
  std::string next_job();
  void work_on(const board::Job& job);
  bool every_rank_has(const std::optional<fs::path>& data);
  std::string fetch(const board::Job& job, const fs::path& dir);
  void report(const board::Job& job, const board::ReplayResult& r);

  const BoardWorkerOptions& o_;
  dist::Communicator& comm_;
  const bool root_;
  const board::Datasets datasets_;
  board::Client client_;
  board::BlobStore cache_;
  std::string name_;
  int64_t done_ = 0;
  std::chrono::steady_clock::time_point idle_since_ = std::chrono::steady_clock::now();
};

int Worker::run() {
  greet();
  for (;;) {
    // Rank 0 decides: a job (as JSON), "" (wait) or "stop".
    const std::string msg = share(root_ ? next_job() : "");
    if (msg == "stop") break;
    if (msg.empty()) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    work_on(board::job_from_json(nlohmann::json::parse(msg)));
  }
  say(fmt::format("wit board worker: {} job(s) done", done_));
  return 0;
}

void Worker::greet() {
  if (!root_) return;
  const auto me = client_.call("GET", "/api/me");
  say(fmt::format("wit board worker: {} for participant {} on {} process(es); {} confirmed "
                  "replay(s) so far, {} required to rank",
                  name_, me["name"].get<std::string>(), comm_.size(),
                  me["confirmed_replays"].get<int64_t>(),
                  me["replays_required_to_rank"].get<int64_t>()));
}

// Rank 0: a leased job, or why there is none.
std::string Worker::next_job() {
  if (g_stop || (o_.jobs > 0 && done_ >= o_.jobs)) return "stop";
  nlohmann::json j = {{"job", nullptr}};
  try {
    j = client_.call("POST", "/api/jobs/lease", nlohmann::json{{"worker", name_}}.dump());
  } catch (const Error& e) {
    // A board restarting or unreachable for a while: ask again.
    say(fmt::format("leasing a job: {}; asking again", e.what()));
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  if (!j["job"].is_null()) return j["job"].dump();
  const double idle =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - idle_since_).count();
  if (o_.idle_exit > 0 && idle > o_.idle_exit) {
    say(fmt::format("no job for {} s: stopping", o_.idle_exit));
    return "stop";
  }
  return "";
}

// Every rank must hold the dataset; a worker without it gives the job back by letting the lease
// expire (it never reports on what it could not check).
bool Worker::every_rank_has(const std::optional<fs::path>& data) {
  uint8_t have = data.has_value(), all = 1;
  std::vector<uint8_t> each(size_t(comm_.size()));
  comm_.all_gather_bytes(&have, 1, each.data());
  for (uint8_t h : each) all &= h;
  return all;
}

// Rank 0 fetches the files into the cache, which every rank must see (one host, or a shared
// file system), and links the run there. What went wrong, on every rank ("" for nothing).
std::string Worker::fetch(const board::Job& job, const fs::path& dir) {
  std::string problem;
  if (root_) {
    try {
      std::map<std::string, std::string> files;
      for (const auto& [file, sha] : job.files) {
        client_.download(sha, job.sizes.at(file), cache_, [&](const std::string&) {});
        files[file] = sha;
      }
      fs::remove_all(dir);
      board::link_run(cache_, files, dir);
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  return share(problem);
}

void Worker::work_on(const board::Job& job) {
  const std::string what = job.segment == board::kFinalSegment
                               ? std::string("final checks")
                               : fmt::format("segment {} (steps {} to {})", job.segment,
                                             job.first_step, job.end_step - 1);
  say(fmt::format("job {}: entry {} {}", job.id, job.entry, what));
  const auto data = datasets_.find(job.manifest_root, job.data_layout);
  if (!every_rank_has(data)) {
    say(fmt::format("job {}: no copy of dataset {} (give it with --datasets); skipping", job.id,
                    job.manifest_root.substr(0, 16)));
    std::this_thread::sleep_for(std::chrono::seconds(2));
    return;
  }
  const fs::path dir = fs::absolute(o_.cache) / "runs" / job.id;
  if (const std::string problem = fetch(job, dir); !problem.empty()) {
    say(fmt::format("job {}: {}", job.id, problem));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  board::ReplayResult r;
  std::string error;
  {
    std::optional<LeaseKeeper> keeper;  // keeps the lease while replaying
    if (root_) keeper.emplace(client_, job);
    try {
      r = run_checks(dir, *data, job.segment, job.segment == board::kFinalSegment, comm_,
                     job.probe_step);
    } catch (const std::exception& e) {
      error = e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (root_) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (!error.empty()) {
      // Not a verdict on the run: the lease expires and the job goes to another worker.
      say(fmt::format("job {}: could not be checked here: {}", job.id, error));
    } else {
      report(job, r);
    }
  }
  idle_since_ = std::chrono::steady_clock::now();
}

// Rank 0 reports the result with its evidence: the state after the step the board drew, which
// only a replay reaches. A board that restarts is asked again until the lease would have expired
// anyway.
void Worker::report(const board::Job& job, const board::ReplayResult& r) {
  const std::string report = nlohmann::json{{"passed", r.passed},
                                            {"detail", r.detail},
                                            {"seconds", r.seconds},
                                            {"evidence", r.evidence},
                                            {"worker", name_}}
                                 .dump();
  for (int attempt = 1;; ++attempt) {
    try {
      client_.call("POST", fmt::format("/api/jobs/{}/report", job.id), report);
      say(fmt::format("job {}: {} ({:.1f} s), reported", job.id,
                      r.passed ? "passed" : "FAILED: " + r.detail, r.seconds));
      ++done_;
      return;
    } catch (const Error& e) {
      if (attempt >= 30 || std::string(e.what()).find(" 4") != std::string::npos) {
        say(fmt::format("job {}: the report was not taken: {}", job.id, e.what()));
        return;
      }
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
  }
}

}  // namespace

int board_worker(const BoardWorkerOptions& o) {
  auto comm = dist::make_communicator();
  const std::string token = participant_token(o.token, "a worker");
  if (o.jobs < 0) fail("--jobs {}: expected >= 0", o.jobs);
  if (!(o.idle_exit >= 0)) fail("--idle-exit {}: expected >= 0 seconds", o.idle_exit);
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  return Worker(o, *comm, token).run();
}

}  // namespace wit::cli
