// The board's verification with the trainer's own code: the checks a board runs at submission
// and in its pool, and `wit board worker`, which replays jobs for a board from another machine.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
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
#include "witness/verify/verify.h"

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

int board_worker(const BoardWorkerOptions& o) {
  auto comm = dist::make_communicator();
  const bool root = comm->is_root();
  const std::string token = participant_token(o.token, "a worker");
  if (o.jobs < 0) fail("--jobs {}: expected >= 0", o.jobs);
  if (!(o.idle_exit >= 0)) fail("--idle-exit {}: expected >= 0 seconds", o.idle_exit);
  const board::Datasets datasets = index_datasets(o.datasets);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string name = o.name.empty() ? fmt::format("{} pid {}", host, ::getpid()) : o.name;
  board::Client client(o.server, token);
  board::BlobStore cache(o.cache);
  auto say = [&](const std::string& line) {
    if (!root) return;
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  if (root) {
    const auto me = client.call("GET", "/api/me");
    say(fmt::format("wit board worker: {} for participant {} on {} process(es); {} confirmed "
                    "replay(s) so far, {} required to rank",
                    name, me["name"].get<std::string>(), comm->size(),
                    me["confirmed_replays"].get<int64_t>(), me["replays_required_to_rank"].get<int64_t>()));
  }
  int64_t done = 0;
  auto idle_since = std::chrono::steady_clock::now();
  // Rank 0 leases and fetches; every rank replays. A message of "" means wait, "stop" stop.
  auto share = [&](std::string text) {
    uint64_t n = text.size();
    comm->broadcast(&n, sizeof n, 0);
    text.resize(n);
    comm->broadcast(text.data(), n, 0);
    return text;
  };
  for (;;) {
    std::string msg;
    if (root) {
      if (g_stop || (o.jobs > 0 && done >= o.jobs)) {
        msg = "stop";
      } else {
        nlohmann::json j = {{"job", nullptr}};
        try {
          j = client.call("POST", "/api/jobs/lease", nlohmann::json{{"worker", name}}.dump());
        } catch (const Error& e) {
          // A board restarting or unreachable for a while: ask again.
          say(fmt::format("leasing a job: {}; asking again", e.what()));
          std::this_thread::sleep_for(std::chrono::seconds(2));
        }
        if (!j["job"].is_null()) {
          msg = j["job"].dump();
        } else if (o.idle_exit > 0 &&
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - idle_since).count() >
                       o.idle_exit) {
          say(fmt::format("no job for {} s: stopping", o.idle_exit));
          msg = "stop";
        }
      }
    }
    msg = share(msg);
    if (msg == "stop") break;
    if (msg.empty()) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    const board::Job job = board::job_from_json(nlohmann::json::parse(msg));
    const std::string what = job.segment == board::kFinalSegment
                                 ? std::string("final checks")
                                 : fmt::format("segment {} (steps {} to {})", job.segment,
                                               job.first_step, job.end_step - 1);
    say(fmt::format("job {}: entry {} {}", job.id, job.entry, what));
    const auto data = datasets.find(job.manifest_root, job.data_layout);
    // Every rank must hold the dataset; a worker without it gives the job back by letting the
    // lease expire (it never reports on what it could not check).
    uint8_t have = data.has_value(), all = 1;
    std::vector<uint8_t> each(size_t(comm->size()));
    comm->all_gather_bytes(&have, 1, each.data());
    for (uint8_t h : each) all &= h;
    if (!all) {
      say(fmt::format("job {}: no copy of dataset {} (give it with --datasets); skipping", job.id,
                      job.manifest_root.substr(0, 16)));
      std::this_thread::sleep_for(std::chrono::seconds(2));
      continue;
    }
    // Rank 0 fetches the files into the cache, which every rank must see (one host, or a shared
    // file system), and links the run there.
    const fs::path dir = fs::absolute(o.cache) / "runs" / job.id;
    std::string problem;
    if (root) {
      try {
        std::map<std::string, std::string> files;
        for (const auto& [file, sha] : job.files) {
          client.download(sha, job.sizes.at(file), cache, [&](const std::string&) {});
          files[file] = sha;
        }
        fs::remove_all(dir);
        board::link_run(cache, files, dir);
      } catch (const std::exception& e) {
        problem = e.what();
      }
    }
    problem = share(problem);
    if (!problem.empty()) {
      say(fmt::format("job {}: {}", job.id, problem));
      continue;
    }
    // Keep the lease while replaying.
    std::mutex m;
    std::condition_variable cv;
    bool finished = false;
    std::thread keeper;
    if (root) {
      const auto period = std::chrono::milliseconds(
          std::max<int64_t>(1000, (job.lease_expires_ms - board::now_ms()) / 3));
      keeper = std::thread([&, period] {
        std::unique_lock<std::mutex> lock(m);
        while (!cv.wait_for(lock, period, [&] { return finished; })) {
          try {
            client.call("POST", fmt::format("/api/jobs/{}/renew", job.id));
          } catch (const std::exception& e) {
            fmt::print("job {}: renewing the lease: {}\n", job.id, e.what());
          }
        }
      });
    }
    const auto start = std::chrono::steady_clock::now();
    board::ReplayResult r;
    std::string error;
    try {
      r = run_checks(dir, *data, job.segment, job.segment == board::kFinalSegment, *comm,
                     job.probe_step);
    } catch (const std::exception& e) {
      error = e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (root) {
      {
        std::lock_guard<std::mutex> lock(m);
        finished = true;
      }
      cv.notify_all();
      keeper.join();
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (!error.empty()) {
        // Not a verdict on the run: the lease expires and the job goes to another worker.
        say(fmt::format("job {}: could not be checked here: {}", job.id, error));
      } else {
        // The evidence: the state after the step the board drew, which only a replay reaches.
        const std::string report = nlohmann::json{{"passed", r.passed},
                                                  {"detail", r.detail},
                                                  {"seconds", r.seconds},
                                                  {"evidence", r.evidence},
                                                  {"worker", name}}
                                       .dump();
        // A board that restarts is asked again until the lease would have expired anyway.
        for (int attempt = 1;; ++attempt) {
          try {
            client.call("POST", fmt::format("/api/jobs/{}/report", job.id), report);
            say(fmt::format("job {}: {} ({:.1f} s), reported", job.id,
                            r.passed ? "passed" : "FAILED: " + r.detail, r.seconds));
            ++done;
            break;
          } catch (const Error& e) {
            if (attempt >= 30 || std::string(e.what()).find(" 4") != std::string::npos) {
              say(fmt::format("job {}: the report was not taken: {}", job.id, e.what()));
              break;
            }
            std::this_thread::sleep_for(std::chrono::seconds(2));
          }
        }
      }
    }
    idle_since = std::chrono::steady_clock::now();
  }
  say(fmt::format("wit board worker: {} job(s) done", done));
  return 0;
}

}  // namespace wit::cli
