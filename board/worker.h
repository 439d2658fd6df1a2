// Verification workers: what replays a job, where its files and dataset come from, and the
// board's own pool of workers (threads inside `wit board serve`). Workers on other machines
// (`wit board worker`) run the same checks and talk to the board over its API.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "board/blob_store.h"
#include "board/jobs.h"

namespace wit::board {

// The trainer's own checks (they need torch, so the app provides them): `run` is a directory
// holding the run's files, `data` the dataset it committed to.
struct Checks {
  // At submission: structure and data audit. Throws an Error for a run the board cannot
  // certify whatever it holds (one that declares a nondeterministic setting).
  std::function<ReplayResult(const std::filesystem::path& run, const std::filesystem::path& data)>
      audit;
  // One job: segment k replayed bit for bit, with the state hash after `probe_step` as the
  // result's evidence (-1: none), or for kFinalSegment the model and evaluation.
  std::function<ReplayResult(const std::filesystem::path& run, const std::filesystem::path& data,
                             int64_t segment, int64_t probe_step)>
      replay;
};

// Prepared datasets this board or worker holds, found by manifest root and data layout (hex).
class Datasets {
 public:
  void add(const std::string& manifest_root, const std::string& data_layout,
           const std::filesystem::path& dir);
  std::optional<std::filesystem::path> find(const std::string& manifest_root,
                                            const std::string& data_layout) const;
  size_t size() const { return dirs_.size(); }

 private:
  std::map<std::string, std::filesystem::path> dirs_;
};

// A run directory under `dir` of symbolic links to the store's files (witness.h5, config.yaml,
// model.safetensors, checkpoints/...): the checks read a run as the trainer left it. Every
// file must be in the store.
void link_run(const BlobStore& store, const std::map<std::string, std::string>& files,
              const std::filesystem::path& dir);

// The board's own workers: `threads` threads, each leasing jobs as kBoardWorker from its own
// connection to the database and replaying them from the board's file store.
class LocalPool {
 public:
  LocalPool(std::string db_where, VerifyPolicy policy, const witness::SigningKey& key,
            BlobStore& store, Datasets datasets, Checks checks, std::filesystem::path work_dir,
            int threads, std::function<void(const std::string&)> log);
  ~LocalPool();  // stops and joins
  void stop();

 private:
  void run(int index);

  std::string db_where_;
  VerifyPolicy policy_;
  const witness::SigningKey& key_;
  BlobStore& store_;
  Datasets datasets_;
  Checks checks_;
  std::filesystem::path work_dir_;
  std::function<void(const std::string&)> log_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace wit::board
