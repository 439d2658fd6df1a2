// The witness log's readers against bad input (another schema, another file, a missing column,
// values kept outside the file, rows that disagree), and its writer killed mid-run and resumed.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "core/h5.h"
#include "tests/data/temp_dir.h"
#include "record/reader.h"
#include "record/summary.h"
#include "record/run_config.h"
#include "record/writer.h"
#include "tests/witness/log_run.h"

namespace wit::witness {
namespace {

using wit::testing::contains;
using wit::testing::error_of;
using wit::testing::TempDir;

using namespace log_testing;

TEST(WitnessLogBadInput, UnknownSchemaVersion) {
  LogRun run;
  run.write();
  {
    h5::File f = h5::File::open_rw(run.file);
    f.set_int_attr("schema_version", 3);
  }
  const std::string msg = error_of([&] { read_log(run.file); });
  EXPECT_TRUE(contains(msg, "schema version 3")) << msg;
  EXPECT_TRUE(contains(msg, "upgrade wit")) << msg;
}

TEST(WitnessLogBadInput, NotAWitnessLog) {
  TempDir dir;
  { h5::File::create(dir / "other.h5").create_group("x"); }
  EXPECT_TRUE(contains(error_of([&] { read_log(dir / "other.h5"); }), "is not a witness log"));
  std::ofstream(dir / "text.h5") << "hello";
  EXPECT_TRUE(contains(error_of([&] { read_log(dir / "text.h5"); }), "not an HDF5 file"));
  EXPECT_TRUE(contains(error_of([&] { read_log(dir / "missing.h5"); }), "no such file"));
}

TEST(WitnessLogBadInput, MissingColumn) {
  LogRun run;
  run.write();
  {
    h5::File f = h5::File::open_rw(run.file);
    f.remove("steps/grad_norm");
  }
  const std::string msg = error_of([&] { read_log(run.file); });
  EXPECT_TRUE(contains(msg, "/steps/grad_norm is missing")) << msg;
}

// A log whose values live outside it. Each form would make a reader (the verifier, the board's
// audit) read another file on its own machine and echo its bytes in a message; each is refused,
// naming the object, before a value is read.
TEST(WitnessLogBadInput, ValuesKeptOutsideTheFileAreRefused) {
  const std::string secret(8 * kSteps, 'S');  // what the other file holds
  TempDir elsewhere;
  const auto secret_file = elsewhere / "secret.bin";
  std::ofstream(secret_file, std::ios::binary) << secret;
  const auto other_h5 = elsewhere / "other.h5";
  {
    h5::File f = h5::File::create(other_h5);
    f.write<uint64_t>("x", std::vector<uint64_t>(kSteps, 0x5353535353535353ull));
  }
  const hsize_t dims[1] = {kSteps};
  // Replaces the log's /steps/step (or adds a link over /steps/loss) with `edit`'s making.
  auto refusal = [&](const std::function<void(hid_t file, hid_t space)>& edit) {
    LogRun run;
    run.write();
    const hid_t file = H5Fopen(run.file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    EXPECT_GE(file, 0);
    edit(file, space);
    H5Sclose(space);
    H5Fclose(file);
    const std::string msg = error_of([&] { check_log(read_log(run.file)); });
    EXPECT_EQ(msg.find("SSSS"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(std::to_string(0x5353535353535353ull)), std::string::npos) << msg;
    return msg;
  };
  auto replace_step = [](hid_t file, hid_t space, hid_t dcpl) {
    ASSERT_GE(H5Ldelete(file, "steps/step", H5P_DEFAULT), 0);
    const hid_t d =
        H5Dcreate2(file, "steps/step", H5T_STD_U64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    H5Dclose(d);
  };

  const std::string external = refusal([&](hid_t file, hid_t space) {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    ASSERT_GE(H5Pset_external(dcpl, secret_file.c_str(), 0, hsize_t(secret.size())), 0);
    replace_step(file, space, dcpl);
    H5Pclose(dcpl);
  });
  EXPECT_TRUE(contains(external, "/steps/step keeps its values in 1 external file(s)")) << external;

  const std::string virtual_dataset = refusal([&](hid_t file, hid_t space) {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hid_t source = H5Screate_simple(1, dims, nullptr);
    ASSERT_GE(H5Pset_virtual(dcpl, space, other_h5.c_str(), "/x", source), 0);
    replace_step(file, space, dcpl);
    H5Sclose(source);
    H5Pclose(dcpl);
  });
  EXPECT_TRUE(contains(virtual_dataset, "/steps/step is a virtual dataset")) << virtual_dataset;

  const std::string external_link = refusal([&](hid_t file, hid_t) {
    ASSERT_GE(H5Ldelete(file, "steps/step", H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_external(other_h5.c_str(), "/x", file, "steps/step", H5P_DEFAULT,
                                 H5P_DEFAULT),
              0);
  });
  EXPECT_TRUE(contains(external_link, "/steps/step is an external link")) << external_link;

  const std::string soft_link = refusal([&](hid_t file, hid_t) {
    ASSERT_GE(H5Ldelete(file, "steps/loss", H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_soft("/steps/grad_norm", file, "steps/loss", H5P_DEFAULT, H5P_DEFAULT), 0);
  });
  EXPECT_TRUE(contains(soft_link, "/steps/loss is a soft link")) << soft_link;

  const std::string filtered = refusal([&](hid_t file, hid_t space) {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[1] = {4};
    ASSERT_GE(H5Pset_chunk(dcpl, 1, chunk), 0);
    ASSERT_GE(H5Pset_deflate(dcpl, 6), 0);
    replace_step(file, space, dcpl);
    H5Pclose(dcpl);
  });
  EXPECT_TRUE(contains(filtered, "/steps/step is stored through 1 filter(s)")) << filtered;
}

// The sessions are the one unsigned part of the metadata: a trainer may write any JSON there.
// Nested a hundred thousand deep it would overflow the stack of whatever copies or prints it
// (wit inspect, the verifier choosing its device); it is read as no sessions instead.
// A small file may hard-link its tables from thousands of places (here every superseded session
// is the root group itself): each read alone fits the file, so the reader's total is bounded.
TEST(WitnessLogBadInput, DataLinkedFromManyPlacesIsNotReadOverAndOver) {
  LogRun run;
  run.write();
  {
    const hid_t file = H5Fopen(run.file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t sup = H5Gcreate2(file, "superseded", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(sup, 0);
    for (int k = 1; k <= 5000; ++k)
      ASSERT_GE(H5Lcreate_hard(file, "/", sup, std::to_string(k).c_str(), H5P_DEFAULT, H5P_DEFAULT), 0);
    H5Gclose(sup);
    H5Fclose(file);
  }
  ASSERT_LT(std::filesystem::file_size(run.file), uint64_t(1) << 20);
  EXPECT_TRUE(contains(error_of([&] { read_log(run.file); }), "links the same data from many places"));
}

// Looking for /steps/step walks /steps: an external link there must be refused before libhdf5
// opens what it names (a FIFO would block the reader for ever). Run apart, under an alarm.
TEST(WitnessLogBadInput, AnExternalLinkOnThePathIsRefusedBeforeItIsOpened) {
  LogRun run;
  run.write();
  TempDir elsewhere;
  const auto fifo = elsewhere / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  {
    const hid_t file = H5Fopen(run.file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    ASSERT_GE(H5Ldelete(file, "steps", H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_external(fifo.c_str(), "/", file, "steps", H5P_DEFAULT, H5P_DEFAULT), 0);
    H5Fclose(file);
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);
    const std::string msg = error_of([&] { read_log(run.file); });
    _exit(contains(msg, "steps is an external link") ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(WitnessLogBadInput, SessionsNestedWithoutEndAreIgnored) {
  LogRun run;
  const std::string deep = "[{\"compute\": " + std::string(100'000, '[') +
                           std::string(100'000, ']') + ", \"data_dir\": \"/x\"}]";
  {
    RunMeta meta = test_meta(run.key);
    meta.sessions_json = deep;
    LogWriter w = LogWriter::create(run.file, meta, SigningKey::load(run.save_key()));
    record(w, 0, kSteps);
    w.sign();
  }
  const WitnessLog log = read_log(run.file);
  const LogReport r = check_log(log);
  EXPECT_TRUE(r.ok()) << first_problem(r);
  EXPECT_EQ(dataset_hint(log), std::filesystem::path());
  EXPECT_EQ(log_summary(log, r)["sessions"], nlohmann::json::array());
  EXPECT_FALSE(summary_text(log, r).empty());
}

// The sessions text is unsigned: fields of unexpected types are left out of the summary, never
// thrown on (a page of the board showing the run would fail on them).
TEST(WitnessLogBadInput, SessionFieldsOfOtherTypesAreLeftOut) {
  LogRun run;
  {
    RunMeta meta = test_meta(run.key);
    meta.sessions_json =
        R"([{"world_size": "two", "dist_mode": 3, "activation_checkpointing": "yes"},)"
        R"( {"world_size": 2, "dist_mode": "ddp", "compute": {"device": 5},)"
        R"(  "versions": {"libtorch": 2}}, "not an object"])";
    LogWriter w = LogWriter::create(run.file, meta, SigningKey::load(run.save_key()));
    record(w, 0, kSteps);
    w.sign();
  }
  const WitnessLog log = read_log(run.file);
  const LogReport r = check_log(log);
  const std::string text = summary_text(log, r);
  EXPECT_TRUE(contains(text, "sessions     3 (world size: 2 ddp)")) << text;
}

TEST(WitnessLogBadInput, RowCountMismatch) {
  LogRun run;
  run.write();
  {
    h5::File f = h5::File::open_rw(run.file);
    f.open_dataset("steps/record_hash").set_rows(kSteps - 1);
  }
  WitnessLog log = read_log(run.file);
  ASSERT_EQ(log.incomplete.size(), 1u);
  EXPECT_EQ(log.incomplete[0].text(),
            "steps row 7, field record_hash: column record_hash has 7 rows but step has 8: rows "
            "from 7 on are incomplete and were not read");
  EXPECT_EQ(log.tables.steps.size(), kSteps - 1);
  EXPECT_FALSE(check_log(log).ok());  // the signature covers the lost row
}

// A writer killed mid-run (SIGKILL, nothing flushed by any destructor) leaves a log that opens and
// verifies through the last complete record.
TEST(WitnessLogCrash, KilledWriterLeavesAValidPrefix) {
  LogRun run;
  const auto key_file = run.save_key();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 6);
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const LogReport r = run.check();
  EXPECT_TRUE(r.ok()) << first_problem(r);
  EXPECT_EQ(r.valid_steps, 6u);
  EXPECT_EQ(r.signed_steps, 4u);
  EXPECT_FALSE(r.complete);
}

// Resumes `run`'s log from its checkpoint after step `at` (state "state AT"), records the rest of
// the run, signs, and reads the log back.
WitnessLog resume_to_the_end(LogRun& run, const std::filesystem::path& key_file, uint64_t at) {
  {
    LogWriter w = LogWriter::resume(
        run.file, test_meta(run.key), SigningKey::load(key_file),
        {at, step_fields(at - 1).weight_fingerprint, {at, sha256("state " + std::to_string(at))}});
    record(w, at, kSteps);
    w.sign();
  }
  return read_log(run.file);
}

TEST(WitnessLogResume, RowsPastTheCheckpointAreSuperseded) {
  LogRun run;
  const auto key_file = run.save_key();
  {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 7);  // checkpoint at 4, then steps 4..6 and a fingerprint at 6
  }
  std::vector<Digest> uninterrupted;
  {
    LogRun ref;
    ref.key = SigningKey::load(key_file);
    ref.write();
    for (auto& s : read_log(ref.file).tables.steps) uninterrupted.push_back(s.hash);
  }
  const WitnessLog log = resume_to_the_end(run, key_file, 4);
  const LogReport r = check_log(log);
  EXPECT_TRUE(r.ok()) << first_problem(r);
  EXPECT_TRUE(r.complete);
  ASSERT_EQ(log.tables.steps.size(), kSteps);
  for (uint64_t i = 0; i < kSteps; ++i) EXPECT_EQ(log.tables.steps[i].hash, uninterrupted[i]);
  ASSERT_EQ(log.superseded.size(), 1u);
  EXPECT_EQ(log.superseded[0].first, "superseded/1");
  EXPECT_EQ(log.superseded[0].second.steps.size(), 3u);
  EXPECT_EQ(log.superseded[0].second.steps[0].fields.step, 4u);
  EXPECT_EQ(log.superseded[0].second.fingerprints.size(), 1u);
  EXPECT_TRUE(contains(r.notes.back(), "superseded/1: 3 step(s)"));
  EXPECT_EQ(sessions_in(log.meta.sessions_json), 2);
}

// The run died after writing a checkpoint but before logging it: the resume logs it.
TEST(WitnessLogResume, LogsACheckpointWrittenButNotRecorded) {
  LogRun run;
  const auto key_file = run.save_key();
  {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 6);
  }
  const WitnessLog log = resume_to_the_end(run, key_file, 6);
  const LogReport r = check_log(log);
  EXPECT_TRUE(r.ok()) << first_problem(r);
  ASSERT_EQ(log.tables.checkpoints.size(), 3u);  // 4, 6 (logged by the resume), 8
  EXPECT_EQ(log.tables.checkpoints[1].fields.step, 6u);
  EXPECT_EQ(log.tables.checkpoints[1].fields.state_hash, sha256("state 6"));
  EXPECT_TRUE(log.superseded.empty());
}

TEST(WitnessLogResume, RefusesAMismatchedCheckpointOrRun) {
  LogRun run;
  const auto key_file = run.save_key();
  {
    LogWriter w = LogWriter::create(run.file, test_meta(run.key), SigningKey::load(key_file));
    record(w, 0, 4);
  }
  const auto before = std::filesystem::file_size(run.file);
  auto resume = [&](const RunMeta& m, ResumePoint at, const std::filesystem::path& k) {
    return error_of([&] { LogWriter::resume(run.file, m, SigningKey::load(k), at); });
  };
  const ResumePoint good{
      4, step_fields(3).weight_fingerprint, {4, sha256("state 4")}};
  ResumePoint bad_weights = good;
  bad_weights.weights[0] ^= 1;
  EXPECT_TRUE(contains(resume(test_meta(run.key), bad_weights, key_file),
                       "its weights' fingerprint differs from the one recorded after step 3"));
  ResumePoint bad_state = good;
  bad_state.checkpoint.state_hash = sha256("other");
  EXPECT_TRUE(contains(resume(test_meta(run.key), bad_state, key_file), "has state hash"));
  RunMeta other = test_meta(run.key);
  other.committed_yaml = committed(kSteps + 1);
  EXPECT_TRUE(contains(resume(other, good, key_file), "belongs to another run"));
  SigningKey stranger = SigningKey::generate();
  stranger.save(run.dir / "stranger.pem");
  EXPECT_TRUE(contains(resume(test_meta(stranger), good, run.dir / "stranger.pem"),
                       "resume with the run's key"));
  ResumePoint ahead = good;
  ahead.steps_done = 6;
  EXPECT_TRUE(contains(resume(test_meta(run.key), ahead, key_file), "records 4 steps"));
  // Nothing was written by the refused resumes.
  EXPECT_EQ(std::filesystem::file_size(run.file), before);
  EXPECT_TRUE(run.check().ok());
}

}  // namespace
}  // namespace wit::witness
