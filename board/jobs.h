// Verification on the board: the challenges drawn after an entry is committed, the jobs that
// replay them, the workers' reports and how they are cross-checked, and each entry's verdict,
// guarantee and certificate (docs/board.md, "Verification").
//
// An entry's run is cut into the K-step segments of its checkpoints (K = train.checkpoint_every).
// Besides the cheap stages run at submission (segment -2: structure and data audit), every entry
// has its final checks (segment -1: model and evaluation) and its first and last segment, all
// replayed by the board itself, and c segments drawn from the board's own random source once the
// entry is committed. Each draw also flips the board's hidden coin (`spot_check`): a segment any
// of whose draws came up "board" is decided by the board's own replay, the others by two
// participants' workers that agree, on the verdict and on evidence only a replay has (the state
// hash after a step inside the segment, drawn when the job is first leased and held in no file).
// Failures, disagreements and missing evidence go to the board's replay; a worker found wrong is
// revoked, and every segment it helped decide is replayed again by the board. So whatever the
// number of identities colluding with an entrant, a bad drawn segment passes only when its coin
// said "participants": a forged fraction f escapes c draws with probability <= (1 - p f)^c.
//
//   JobQueue q(db, policy, board_key);
//   q.schedule(entry_id);                       // after the entry is committed
//   auto job = q.lease(participant_id);         // or kBoardWorker for the board's own pool
//   q.report(job->id, participant_id, "host-a", {true, "segment 3 ... bit for bit", 1.2});
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "board/db.h"
#include "record/signing.h"

namespace wit::board {

// The reporter and lease holder name of the board's own worker pool.
constexpr const char* kBoardWorker = "board";
constexpr int64_t kAuditSegment = -2;  // structure and data audit, at submission
constexpr int64_t kFinalSegment = -1;  // model and evaluation

struct VerifyPolicy {
  int64_t challenges = 4;    // segments drawn at submission besides the first and the last
  int64_t contribution = 2;  // confirmed replays of others' segments a submitter owes to be ranked
  double spot_check = 0.25;  // chance that the board itself checks a participant's report
  int64_t pool_delay_ms = 0;      // the board's pool leaves open jobs this long to participants
  int64_t lease_ms = 600'000;     // a lease not renewed in this time returns the job to the queue
  int64_t max_leases = 8;         // jobs one participant may hold at once
  // How long a participant may hold one job, renewals included: renewing cannot keep a job from
  // the others (nor an entry from its verdict) for ever.
  int64_t max_hold_ms = 6 * 3'600'000;
  // Leases of one job that participants may take; a job they let lapse that often is the board
  // pool's, whatever pool_delay_ms says.
  int64_t participant_attempts = 2;
  int64_t max_pending_draws = 1000;  // re-challenges wait while an entry has this many undecided
  // Draws an entry may have in all. Each re-signs its certificate, which lists them, so without
  // a bound anyone with a token could grow an entry's page and certificate without end.
  int64_t max_draws = 10'000;
};

// A leased job: what to replay and with which files.
struct Job {
  std::string id, entry, role;  // role: replay, check or board
  int64_t segment = 0;          // kFinalSegment or a segment index
  int64_t first_step = 0, end_step = 0;
  std::map<std::string, std::string> files;  // run file name -> SHA-256 hex
  std::map<std::string, uint64_t> sizes;     // run file name -> bytes (for downloads)
  std::string manifest_root, data_layout;    // the dataset (hex)
  int64_t lease_expires_ms = 0;              // Unix time
  // The evidence asked for: the state hash after this step (-1: none, for the final checks and
  // one-step segments).
  int64_t probe_step = -1;
};
nlohmann::json job_json(const Job& j);
Job job_from_json(const nlohmann::json& j);  // throws Error on a malformed job

// What a replay found: passed, or the first failing step and field.
struct ReplayResult {
  bool passed = false;
  std::string detail;
  double seconds = 0;
  std::string evidence;  // hex state hash after the job's probe step; "" when it has none
  // The audit's: how the board's copy of the dataset names documents, as wit verify's
  // certificate states it ({"tokenizer", "tokens_in_no_document"}); null for other jobs.
  nlohmann::json dataset = nullptr;
};

// The facts of a submitted run the board keeps for its certificate and ranking.
struct EntryFacts {
  nlohmann::json certificate_fields;  // genesis, signed_head, manifest_root, ... (see jobs.cpp)
  int64_t steps = 0, segment_steps = 0, segments = 0;
  double val_loss = 0;
  int64_t params = 0, tokens = 0;
  // Steps strictly inside a segment whose state the log commits (checkpoints off the schedule,
  // as a run stopped with --until makes): their hashes are public, so no probe is drawn there.
  std::vector<int64_t> committed_inside;
};

void migrate_jobs(Db& db);

class JobQueue {
 public:
  JobQueue(Db& db, VerifyPolicy policy, const witness::SigningKey& key);
  const VerifyPolicy& policy() const { return policy_; }

  // Records an entry's facts and the audit's result (inside the caller's transaction).
  void record(const std::string& entry, const EntryFacts& facts, const ReplayResult& audit);
  // After the entry is committed: draws its challenges and queues their jobs (no-op for an
  // entry whose audit failed).
  void schedule(const std::string& entry);
  // c more draws for `entry`, requested by participant `by`; returns the drawn segments.
  std::vector<int64_t> rechallenge(const std::string& entry, int64_t c, const std::string& by);

  // The next job `who` (a participant id or kBoardWorker) may replay: never its own entries'
  // and never a segment it reported on. nullopt when there is none.
  std::optional<Job> lease(const std::string& who);
  // Extends the lease, up to max_hold_ms from when it was leased (the board's pool has no such
  // bound); false when `who` no longer holds it or has held it that long.
  bool renew(const std::string& job, const std::string& who);
  // A worker's result. Throws an Error when `who` does not hold the job's lease.
  void report(const std::string& job, const std::string& who, const std::string& worker,
              const ReplayResult& r);

  bool revoked(const std::string& participant);
  // An operator's decision after looking into a revocation: the participant's worker may lease
  // jobs again (its void reports stay void). False when it was not revoked.
  bool reinstate(const std::string& participant);
  // Replays of other participants' segments whose evidence the board's own replay confirmed.
  int64_t contributions(const std::string& participant);
  // Everything the entry page shows about verification: segments, draws, reports, guarantee,
  // certificate (when certified), ranked or why not; `full = false` leaves out the checks,
  // draws and reports (for track listings).
  nlohmann::json verification(const std::string& entry, bool full = true);
  // verification(entry, false) of every entry of a track, in a few queries.
  std::map<std::string, nlohmann::json> summaries(const std::string& track);
  // The signed certificate of a certified entry.
  std::optional<nlohmann::json> certificate(const std::string& entry);
  // The signed list of every certificate the board issued and withdrew since (the entry was
  // struck, or a report a check relied on was found wrong), issued now.
  nlohmann::json status_list();
  // Entries whose audit passed but whose challenges were never drawn (the board stopped in
  // between): drawn now. Returns how many.
  int schedule_missing();

 private:
  void queue_job(const std::string& entry, int64_t segment, const std::string& role,
                 const std::string& exclude);
  void draw(const std::string& entry, int64_t c, const std::string& origin, const std::string& by,
            std::vector<int64_t>* drawn);
  void decide(const std::string& entry, int64_t segment);
  // Whether a draw of the segment came up "board" on the board's coin (always for the first and
  // last); and the step whose state is the segment's evidence, drawn on first use.
  bool board_coin(const std::string& entry, int64_t segment);
  int64_t probe_step(const std::string& entry, int64_t segment, int64_t first, int64_t end);
  void queue_board_job(const std::string& entry, int64_t segment);
  void revoke(const std::string& participant, const std::string& reason);
  // Whether the certificate of this id was issued and not withdrawn.
  bool standing_certificate(const std::string& id);
  // Marks the entry's standing certificates withdrawn ("struck" or "revoked", and why).
  void withdraw_certificates(const std::string& entry, const std::string& status,
                             const std::string& reason);
  // board/verdicts.cpp: the entry's status, failure and certificate from its checks.
  void refresh(const std::string& entry);
  nlohmann::json guarantee(const std::string& entry);

  Db& db_;
  VerifyPolicy policy_;
  const witness::SigningKey& key_;
};

// Milliseconds since the Unix epoch.
int64_t now_ms();
// How pages name a check: "structure and data audit", "final model and evaluation" or
// "segment 3 (steps 30 to 39)".
std::string check_label(int64_t segment, int64_t first_step, int64_t end_step);

}  // namespace wit::board
