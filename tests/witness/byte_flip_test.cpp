// One rule for every reader: a byte of the witness log is either committed or inert. Over a small
// real run, every byte of every dataset and attribute of witness.h5 is flipped, one at a time,
// through HDF5 (so the file stays well-formed HDF5): each flip must either make the log's check
// report a problem (what `wit inspect` prints, exiting 1) or leave what `wit verify` and
// `wit query` answer exactly as it was.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <fstream>
#include <functional>
#include <map>

#include "core/error.h"
#include "tests/data/temp_dir.h"
#include "trainer/data/prepare.h"
#include "trainer/dist/communicator.h"
#include "trainer/train_loop.h"
#include "record/reader.h"
#include "query/query.h"
#include "verify/verify.h"

namespace wit::witness {
namespace {

namespace fs = std::filesystem;
using wit::testing::TempDir;

// Every object of the file whose stored bytes can be flipped: (path, attribute or "").
struct Target {
  std::string object;     // "/meta", "/steps/loss", …
  std::string attribute;  // empty: the dataset's data
};

std::vector<Target> targets_of(hid_t file) {
  std::vector<Target> out;
  std::function<void(const std::string&)> walk = [&](const std::string& path) {
    hid_t obj = H5Oopen(file, path.c_str(), H5P_DEFAULT);
    H5O_info_t info{};
#if H5_VERSION_GE(1, 12, 0)
    H5Oget_info3(obj, &info, H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS);
#else
    H5Oget_info2(obj, &info, H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS);
#endif
    for (hsize_t i = 0; i < info.num_attrs; ++i) {
      char name[256] = "";
      H5Aget_name_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
      out.push_back({path, name});
    }
    if (info.type == H5O_TYPE_DATASET) out.push_back({path, ""});
    if (info.type == H5O_TYPE_GROUP) {
      H5G_info_t g{};
      H5Gget_info(obj, &g);
      for (hsize_t i = 0; i < g.nlinks; ++i) {
        char name[256] = "";
        H5Lget_name_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                           H5P_DEFAULT);
        walk((path == "/" ? "/" : path + "/") + name);
      }
    }
    H5Oclose(obj);
  };
  walk("/");
  return out;
}

// The stored bytes of a target, and a way to write them back (same type, same size).
std::vector<uint8_t> read_bytes(hid_t file, const Target& t) {
  std::vector<uint8_t> buf;
  if (!t.attribute.empty()) {
    hid_t a = H5Aopen_by_name(file, t.object.c_str(), t.attribute.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    hid_t type = H5Aget_type(a), space = H5Aget_space(a);
    buf.resize(H5Tget_size(type) * size_t(H5Sget_simple_extent_npoints(space)));
    H5Aread(a, type, buf.data());
    H5Sclose(space), H5Tclose(type), H5Aclose(a);
  } else {
    hid_t d = H5Dopen2(file, t.object.c_str(), H5P_DEFAULT);
    hid_t type = H5Dget_type(d), space = H5Dget_space(d);
    buf.resize(H5Tget_size(type) * size_t(H5Sget_simple_extent_npoints(space)));
    if (!buf.empty()) H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    H5Sclose(space), H5Tclose(type), H5Dclose(d);
  }
  return buf;
}

void write_bytes(hid_t file, const Target& t, const std::vector<uint8_t>& buf) {
  if (!t.attribute.empty()) {
    // Rewritten whole (HDF5 1.10 cannot always write an attribute of a latest-format object in
    // place): same name, type and shape, the flipped bytes.
    hid_t a = H5Aopen_by_name(file, t.object.c_str(), t.attribute.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    hid_t type = H5Aget_type(a), space = H5Aget_space(a);
    H5Aclose(a);
    hid_t obj = H5Oopen(file, t.object.c_str(), H5P_DEFAULT);
    H5Adelete(obj, t.attribute.c_str());
    a = H5Acreate2(obj, t.attribute.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    const herr_t rc = H5Awrite(a, type, buf.data());
    H5Aclose(a), H5Sclose(space), H5Tclose(type), H5Oclose(obj);
    ASSERT_GE(rc, 0) << "cannot write attribute " << t.attribute << " of " << t.object;
  } else {
    hid_t d = H5Dopen2(file, t.object.c_str(), H5P_DEFAULT);
    hid_t type = H5Dget_type(d);
    const herr_t rc = H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    H5Tclose(type), H5Dclose(d);
    ASSERT_GE(rc, 0) << "cannot write " << t.object;
  }
}

struct SmallRun {
  TempDir dir;
  fs::path data = dir / "data", run = dir / "run", key = dir / "trainer.pem";
  SmallRun() {
    fs::create_directories(dir / "docs");
    for (int i = 1; i <= 12; ++i) {
      std::ofstream f(dir / "docs" / ("d" + std::to_string(i) + ".txt"));
      f << "Document " << i << ":";
      for (int k = 0; k < 3 * i; ++k) f << " " << k;
      f << "\n";
    }
    data::PrepareOptions p;
    p.input = dir / "docs";
    p.format = "dir";
    p.val_fraction = 0.25;
    p.out = data;
    data::prepare(p);
    SigningKey::generate().save(key);
    std::ofstream(dir / "run.yaml")
        << "model:\n  n_layer: 1\n  n_head: 2\n  n_embd: 8\n  context: 8\n"
           "data:\n  dir: \""
        << data.string()
        << "\"\n  seq_len: 8\n"
           "train:\n  steps: 4\n  micro_batches: 2\n  micro_batch_size: 2\n"
           "  checkpoint_every: 2\n  eval_every: 2\n  eval_batches: 1\n"
           "witness:\n  fingerprint_every: 2\n  probe_sequences: 2\n";
    TrainOptions o;
    o.config = dir / "run.yaml";
    o.run_dir = run;
    o.quiet = true;
    o.key = key;
    train(o);
  }
};

// What `wit verify` decides (with the verifier's seed, so that the draws repeat), and what
// `wit query` answers and proves for every document, as text.
std::string verdicts(const SmallRun& r) {
  std::string out;
  VerifyOptions v;
  v.run = r.run;
  v.data = r.data;
  v.source = ChallengeSource::VerifierSeed;
  v.seed = 7;
  v.challenges = 2;
  auto comm = dist::make_single_process();
  VerifyReport report = verify_run(v, *comm, [](const std::string&) {});
  out += std::string(outcome_name(report.outcome)) + " | " + report.reason + "\n";
  for (auto& s : report.stages) out += s.name + " " + std::to_string(s.passed) + " " + s.detail + "\n";
  report.certificate.erase("verified_at");
  out += report.certificate.dump() + "\n";
  const WitnessLog log = read_log(r.run / kLogFileName);
  const DataIndex index(data::read_manifest(r.data / data::kManifestFile),
                        RunFacts::from_log(log, check_log(log)), r.data.string());
  for (auto& d : index.manifest().documents) {
    const Answer a = index.query_id(d.id);
    out += std::string(verdict_name(a.verdict)) + " " + std::to_string(a.occurrences.size()) + " " +
           index.proof(a).dump() + "\n";
  }
  return out;
}

TEST(ByteFlip, EveryByteOfTheLogIsCommittedOrInert) {
  SmallRun r;
  const fs::path log_file = r.run / kLogFileName, pristine = r.dir / "pristine.h5";
  fs::copy_file(log_file, pristine);
  const std::string baseline = verdicts(r);
  ASSERT_NE(baseline.find("certified |"), std::string::npos) << baseline;
  ASSERT_NE(baseline.find("included"), std::string::npos);

  hid_t f = H5Fopen(pristine.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const std::vector<Target> targets = targets_of(f);
  std::map<std::string, std::vector<uint8_t>> stored;
  for (auto& t : targets) stored[t.object + "@" + t.attribute] = read_bytes(f, t);
  H5Fclose(f);

  size_t flips = 0, reported = 0, inert = 0, refused = 0;
  std::map<std::string, size_t> inert_by_target;
  for (auto& t : targets) {
    const std::vector<uint8_t>& bytes = stored[t.object + "@" + t.attribute];
    for (size_t i = 0; i < bytes.size(); ++i) {
      fs::copy_file(pristine, log_file, fs::copy_options::overwrite_existing);
      std::vector<uint8_t> flipped = bytes;
      flipped[i] ^= 0x01;
      hid_t w = H5Fopen(log_file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
      ASSERT_GE(w, 0);
      write_bytes(w, t, flipped);
      H5Fclose(w);
      ++flips;
      bool problem = false;
      try {
        problem = !check_log(read_log(log_file)).ok();
      } catch (const Error&) {
        problem = true;  // not readable as a log: `wit inspect` says so and exits 1
      }
      if (problem) {
        ++reported;
        continue;
      }
      ++inert;
      ++inert_by_target[t.object + (t.attribute.empty() ? "" : " attribute " + t.attribute)];
      std::string got;
      try {
        got = verdicts(r);
      } catch (const Error& e) {
        // Session facts are unsigned claims: a changed one may only make the verifier refuse
        // before replaying (other CPU numerics or GPU), never change a verdict.
        EXPECT_EQ(t.attribute, "sessions_json") << e.what();
        EXPECT_NE(std::string(e.what()).find("an exact replay needs the same"), std::string::npos)
            << e.what();
        ++refused;
        continue;
      }
      EXPECT_EQ(got, baseline)
          << "flipping byte " << i << " of " << t.object << " " << t.attribute
          << " is neither reported by the log's check nor without effect on verify and query";
    }
  }
  fs::copy_file(pristine, log_file, fs::copy_options::overwrite_existing);
  std::string where;
  for (auto& [name, n] : inert_by_target) where += " " + name + " (" + std::to_string(n) + ")";
  std::cout << flips << " single-byte flips: " << reported << " reported as tampering, " << inert
            << " inert:" << where << "; " << refused
            << " of the inert ones made the verifier refuse (a session's numerics changed)\n";
  EXPECT_GT(reported, 1000u);
  // The inert bytes are exactly the unhashed facts: session facts and wall-clock times.
  for (auto& [name, n] : inert_by_target)
    EXPECT_TRUE(name == "/meta attribute sessions_json" || name == "/meta attribute created" ||
                name == "/steps/wall_time" || name == "/steps/step_seconds" ||
                name == "/signatures/wall_time")
        << name << " holds " << n << " bytes no check covers";
}

}  // namespace
}  // namespace wit::witness
