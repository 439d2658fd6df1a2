// HDF5: a thin checked RAII layer over the C API (files, groups, datasets, attributes).
// Every failing call throws wit::Error naming the file, the object, the operation and HDF5's stack.
//
//   h5::File f = h5::File::create("log.h5");
//   f.set_string_attr("tool", "wit");
//   h5::Group g = f.create_group("documents");
//   g.write("length", std::vector<uint64_t>{3, 5});
//   h5::Dataset steps = f.create_series<uint64_t>("steps/step");
//   steps.append(std::vector<uint64_t>{0});  // one row per training step
//   steps.flush();
//   h5::File in = h5::File::open_read("log.h5");
//   std::vector<uint64_t> lengths = in.read<uint64_t>("documents/length");
//
// HDF5's own error printing is switched off; its messages travel in the exceptions instead.
// <hdf5.h> stays out of this header: handles are plain 64-bit ids (hid_t) here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/sha256.h"

namespace wit::h5 {

namespace fs = std::filesystem;

// Metadata read attempts for a file read while it may be written (SWMR): enough to ride out a
// writer's flush, few enough that a damaged file fails at once.
constexpr unsigned kLiveReadAttempts = 4;

// "HDF5 1.10.8": the library this build links.
std::string library_version();

// Element types the typed helpers read and write, mapped to HDF5's native types in h5.cpp.
enum class Element { U8, U32, U64, I64, F32, F64 };

// Only the specialisations exist: an unsupported element type fails to compile.
template <typename T>
constexpr Element element_of();
template <>
constexpr Element element_of<uint8_t>() {
  return Element::U8;
}
template <>
constexpr Element element_of<uint32_t>() {
  return Element::U32;
}
template <>
constexpr Element element_of<uint64_t>() {
  return Element::U64;
}
template <>
constexpr Element element_of<int64_t>() {
  return Element::I64;
}
template <>
constexpr Element element_of<float>() {
  return Element::F32;
}
template <>
constexpr Element element_of<double>() {
  return Element::F64;
}

// Owns one HDF5 identifier: closed exactly once, by the last owner; move-only.
class Handle {
 public:
  Handle() = default;
  explicit Handle(int64_t id) : id_(id) {}
  ~Handle();
  Handle(Handle&& other) noexcept : id_(other.id_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  int64_t id() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now (destructors do it anyway); errors from HDF5 are ignored, as in a destructor.
  void reset();

 private:
  int64_t id_ = -1;
};

// Anything that carries attributes: a file (its root group), a group or a dataset.
class Object {
 public:
  // Writing replaces an attribute of the same name. Strings are stored variable-length UTF-8.
  void set_string_attr(const std::string& name, const std::string& value);
  void set_int_attr(const std::string& name, int64_t value);
  void set_uint_attr(const std::string& name, uint64_t value);
  void set_double_attr(const std::string& name, double value);

  bool has_attr(const std::string& name) const;
  // Every attribute's name, in creation order where HDF5 tracks it, else by name.
  std::vector<std::string> attribute_names() const;
  // Reading accepts fixed- or variable-length strings and any stored numeric type that
  // converts (integers must be stored as integers, floats as floats).
  std::string string_attr(const std::string& name) const;
  int64_t int_attr(const std::string& name) const;
  uint64_t uint_attr(const std::string& name) const;
  double double_attr(const std::string& name) const;

  // "path/to/file.h5:/group/dataset": how errors name this object.
  std::string where() const;
  const std::string& file_path() const { return file_; }
  const std::string& object_path() const { return path_; }
  int64_t id() const { return handle_.id(); }

 protected:
  Object() = default;
  Object(Handle handle, std::string file, std::string path)
      : handle_(std::move(handle)), file_(std::move(file)), path_(std::move(path)) {}
  std::string child_path(const std::string& name) const;

  Handle handle_;
  std::string file_;
  std::string path_;

 private:
  void write_scalar_attr(const std::string& name, Element type, const void* value);
  void read_scalar_attr(const std::string& name, Element type, void* value) const;
};

class Dataset : public Object {
 public:
  Dataset() = default;

  // Dimensions, outermost first: {n} for 1-D, {n, 32} for digests.
  std::vector<uint64_t> shape() const;
  uint64_t rows() const;  // shape()[0]

  // Whole-dataset reads. read<T> needs a 1-D dataset; read_digests an (n, 32) uint8 one.
  template <typename T>
  std::vector<T> read() const {
    check_read_size(rows_of_1d(), sizeof(T));
    std::vector<T> out(rows_of_1d());
    read_all(element_of<T>(), out.data());
    return out;
  }
  std::vector<Digest> read_digests() const;
  std::vector<std::string> read_strings() const;
  // A 1-D fixed-length string dataset of exactly `width` bytes per row, each row as stored:
  // every byte, padding included (read_strings stops at the first NUL).
  std::vector<std::string> read_fixed_string_bytes(size_t width) const;
  // Rows [first, first + count) of a 1-D dataset, e.g. one training step of the witness log.
  template <typename T>
  std::vector<T> read_rows(uint64_t first, uint64_t count) const {
    check_read_size(count, sizeof(T));
    std::vector<T> out(count);
    read_range(element_of<T>(), first, count, 1, out.data());
    return out;
  }
  std::vector<Digest> read_digest_rows(uint64_t first, uint64_t count) const;
  // Rows [first, first + count) of an (n, width) dataset, row-major (width 1: a 1-D dataset).
  template <typename T>
  std::vector<T> read_matrix_rows(uint64_t first, uint64_t count, uint64_t width) const {
    check_read_size(count, width > 0 && width < (uint64_t(1) << 32) ? width * sizeof(T) : ~0ull);
    std::vector<T> out(count * width);
    read_range(element_of<T>(), first, count, width, out.data());
    return out;
  }
  // Columns of a 2-D dataset; 1 for a 1-D one.
  uint64_t width() const;

  // Extendible datasets only (Group::create_series / create_digest_series): grows the
  // dataset by `count` rows and writes them at the end.
  template <typename T>
  void append(const T* rows, size_t count) {
    append_raw(element_of<T>(), rows, count, 1);
  }
  template <typename T>
  void append(const std::vector<T>& rows) {
    append(rows.data(), rows.size());
  }
  void append_digests(const std::vector<Digest>& rows);
  // `count` rows of an (n, width) series, row-major.
  template <typename T>
  void append_rows(const T* rows, size_t count, uint64_t width) {
    append_raw(element_of<T>(), rows, count, width);
  }
  // Fixed-length string series (Group::create_fixed_string_series); a string longer than the
  // column's width is an error, not a truncation.
  void append_fixed_strings(const std::vector<std::string>& rows);

  // Editing in place, for repairs and for tests that tamper with a file on purpose: overwrite rows
  // [first, first + count) of an (n, width) dataset, or change an extendible dataset's row count.
  template <typename T>
  void overwrite_rows(uint64_t first, const T* rows, size_t count, uint64_t width) {
    overwrite_raw(element_of<T>(), first, rows, count, width);
  }
  void set_rows(uint64_t rows);
  // Pushes everything written so far to the file on disk (H5Fflush of the whole file), so that
  // a crash after this call loses nothing that was appended before it.
  void flush();

 private:
  friend class Group;
  Dataset(Handle h, std::string file, std::string path)
      : Object(std::move(h), std::move(file), std::move(path)) {}
  uint64_t rows_of_1d() const;
  // Fails when `rows` of `row_bytes` could not be in this dataset's file (a damaged shape).
  void check_read_size(uint64_t rows, uint64_t row_bytes) const;
  void read_all(Element type, void* out) const;
  void read_range(Element type, uint64_t first, uint64_t count, uint64_t width, void* out) const;
  void append_raw(Element type, const void* rows, size_t count, uint64_t width);
  void overwrite_raw(Element type, uint64_t first, const void* rows, size_t count, uint64_t width);
};

class Group : public Object {
 public:
  Group() = default;

  Group create_group(const std::string& name);
  Group open_group(const std::string& name) const;
  // The names of the links directly below this group, sorted.
  std::vector<std::string> member_names() const;
  // Whether `name` below this group is a group (false for a dataset or anything else).
  bool is_group(const std::string& name) const;
  // Whether a link `name` (which may be a path "a/b") exists below this group.
  bool exists(const std::string& name) const;
  // Unlinks a dataset or group (the file does not shrink; HDF5 reuses the space when it can).
  void remove(const std::string& name);

  // Fixed-size 1-D datasets, written whole and read whole.
  template <typename T>
  Dataset write(const std::string& name, const std::vector<T>& data) {
    return write_1d(name, element_of<T>(), data.data(), data.size());
  }
  template <typename T>
  std::vector<T> read(const std::string& name) const {
    return open_dataset(name).read<T>();
  }
  // Digests as an (n, 32) uint8 dataset.
  Dataset write_digests(const std::string& name, const std::vector<Digest>& digests);
  std::vector<Digest> read_digests(const std::string& name) const;
  // Variable-length UTF-8 strings (h5py: dataset.asstr()[:]); reading also accepts fixed length.
  Dataset write_strings(const std::string& name, const std::vector<std::string>& strings);
  std::vector<std::string> read_strings(const std::string& name) const;

  // Extendible, chunked datasets that start empty and grow by Dataset::append:
  // 1-D of T, or (n, 32) uint8 for digests. `chunk_rows` rows are stored per chunk.
  template <typename T>
  Dataset create_series(const std::string& name, size_t chunk_rows = 1024) {
    return create_extendible(name, element_of<T>(), 1, chunk_rows);
  }
  Dataset create_digest_series(const std::string& name, size_t chunk_rows = 1024);
  // (n, width) of T, e.g. 16-byte fingerprints or a vector of floats per row.
  template <typename T>
  Dataset create_matrix_series(const std::string& name, uint64_t width, size_t chunk_rows = 1024) {
    return create_extendible(name, element_of<T>(), width, chunk_rows);
  }
  // 1-D of fixed-length, null-padded UTF-8 strings of at most `width` bytes (h5py reads bytes).
  // Unlike variable-length strings these can be appended while readers watch (SWMR).
  Dataset create_fixed_string_series(const std::string& name, size_t width,
                                     size_t chunk_rows = 1024);

  Dataset open_dataset(const std::string& name) const;

 protected:
  friend class File;
  Group(Handle h, std::string file, std::string path)
      : Object(std::move(h), std::move(file), std::move(path)) {}

 private:
  Dataset write_1d(const std::string& name, Element type, const void* data, size_t n);
  Dataset create_extendible(const std::string& name, Element type, uint64_t width,
                            size_t chunk_rows);
};

// Bounds what one reader takes from untrusted files on this thread: while a ReadBudget lives,
// every dataset read is charged to it, and a read past `bytes` throws. Each read is also bounded
// by its file's size, but a file can hard-link one dataset (or a group of them) from many
// places, so per-read bounds alone do not bound a reader that follows every link.
class ReadBudget {
 public:
  explicit ReadBudget(uint64_t bytes);
  ~ReadBudget();
  ReadBudget(const ReadBudget&) = delete;
  ReadBudget& operator=(const ReadBudget&) = delete;
  // Adds `bytes` read from `where`; throws once the total passes the budget.
  static void charge(uint64_t bytes, const std::string& where);

 private:
  uint64_t limit_, used_ = 0;
  ReadBudget* outer_;
};

// A file is also its root group ("/").
class File : public Group {
 public:
  File() = default;

  static File create(const fs::path& path);     // truncates an existing file
  static File open_read(const fs::path& path);  // read-only
  static File open_rw(const fs::path& path);    // read-write, must exist

  // Live files: a single writer appends while any number of readers (this library, h5py with
  // swmr=True) read consistent snapshots (HDF5's SWMR). create_live uses the latest file format,
  // which SWMR needs; create every group, dataset and attribute, then start_live_writing():
  // from then on only appends (and flushes) are allowed.
  static File create_live(const fs::path& path);
  void start_live_writing();
  // Opens a file made by create_live for appending while readers watch (SWMR write).
  static File open_live_write(const fs::path& path);
  // Reads a file whether or not a writer still has it open, or crashed while it did (the file
  // then still says it is being written; a plain open refuses it). A finished file is opened
  // plainly: only a file marked as being written is read as a live (SWMR) file, and then with a
  // bounded number of metadata read attempts, so that a damaged file fails instead of being
  // retried without end.
  static File open_read_live(const fs::path& path);

  void flush();
  // Closes the file now (the destructor does it otherwise); objects opened from it that are
  // still alive keep it open until they go too.
  void close() { handle_.reset(); }
  const fs::path& path() const { return fs_path_; }

 private:
  File(Handle h, const fs::path& path);
  static File open(const fs::path& path, unsigned flags);
  // Fails naming the file when it is missing, a directory or not HDF5.
  static void check_openable(const fs::path& path);
  fs::path fs_path_;
};

}  // namespace wit::h5
