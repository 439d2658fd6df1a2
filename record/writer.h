// Writing a run's witness log (rank 0 only). Every append is flushed before it returns, and the
// file is live (HDF5 SWMR): `wit inspect` and h5py can read it while the run trains, and a crash
// loses at most the row being written.
//
//   LogWriter w = LogWriter::create(run / kLogFileName, meta, std::move(key));
//   w.append_step(fields, timing);            // after every step
//   w.append_checkpoint({step, state_hash});  // after every checkpoint...
//   w.sign();                                 // ...and a signature over the heads
#pragma once

#include <filesystem>

#include "core/h5.h"
#include "record/reader.h"
#include "record/tables_io.h"

namespace wit::witness {

// Free space the writer keeps in hand on the log's file system: an append that could not be
// finished cleanly (HDF5 may have updated a dataset's size but not yet its data when a write
// fails) is refused before it starts, so a full disk stops the run with the log intact.
constexpr uint64_t kFreeSpaceReserve = 4ull << 20;

// Where a resumed run starts: the checkpoint it loaded.
struct ResumePoint {
  uint64_t steps_done = 0;
  Fingerprint weights{};        // sketch of the loaded parameters
  CheckpointFields checkpoint;  // the checkpoint loaded (ignored when steps_done is 0)
};

// Writes a complete log file from rows as they are (hashes and signatures included), atomically:
// a temporary beside `file`, then renamed over it. For repairs and migrations; LogWriter::resume
// uses it.
void write_log_file(const std::filesystem::path& file, const RunMeta& meta, const Tables& main,
                    const std::vector<std::pair<std::string, Tables>>& superseded);

class LogWriter {
 public:
  // Starts the log of a new run; `file` must not exist. The log is signed at once (the genesis).
  static LogWriter create(const std::filesystem::path& file, const RunMeta& meta, SigningKey key);

  // Continues the log of a run resumed at `at`. The log must verify through that point, belong to
  // the same trajectory (genesis) and key, and agree with the checkpoint (weights fingerprint,
  // state hash). Rows past the resume point, left by the interrupted session, move to
  // /superseded/<k>: kept, outside the chain. `meta.sessions_json` holds the new session only;
  // it is appended to the log's list. The file is rewritten to a temporary and renamed into
  // place, so a failure leaves the old log as it was.
  static LogWriter resume(const std::filesystem::path& file, const RunMeta& meta, SigningKey key,
                          const ResumePoint& at);

  void append_step(const StepFields& fields, const StepTiming& timing);
  void append_fingerprint(const FingerprintFields& fields);
  void append_checkpoint(const CheckpointFields& fields);
  // A checkpoint that became durable after later steps were appended (written in the
  // background): anchored to its own step's record hash, heads().step_head when the state was
  // taken.
  void append_checkpoint(const CheckpointFields& fields, const Digest& anchor);
  void append_eval(const EvalFields& fields);
  // Signs the current heads (skipped when the last signature already covers them).
  void sign();

  const Heads& heads() const { return heads_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  LogWriter(const std::filesystem::path& file, SigningKey key, const Heads& heads,
            const SignatureRow* last_signature);
  // Fails, writing nothing, when less than kFreeSpaceReserve is free.
  void check_space() const;
  template <typename Row, typename Fields, typename HashFn, typename AppendFn>
  void append_side(const Fields& f, Digest& head, uint64_t& rows, HashFn hash_fn, AppendFn append,
                   const Digest& anchor);
  std::filesystem::path path_;
  SigningKey key_;
  h5::File file_;
  io::TableColumns columns_;
  Heads heads_;
  Heads signed_{};  // what the last signature covers
  bool any_signature_ = false;
};

}  // namespace wit::witness
