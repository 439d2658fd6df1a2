// Groups and files: creation without timestamps (same content, same bytes), live (SWMR)
// writing and reading, and opening with the reason a file cannot be.
#include "core/h5_detail.h"

#include <fmt/format.h>

namespace wit::h5 {

// ---------------------------------------------------------------------------------------------
// Group

namespace {

// Link creation that makes missing intermediate groups, so "steps/loss" works on its own.
Handle intermediate_groups_lcpl(const std::string& where) {
  Handle lcpl(check_id(H5Pcreate(H5P_LINK_CREATE), "create link properties for", where));
  check(H5Pset_create_intermediate_group(lcpl.id(), 1), "set link properties for", where);
  return lcpl;
}

// HDF5 stamps objects with their modification time by default; without it, the same content
// gives the same file bytes, which is what a system built on hashes wants.
Handle creation_props(hid_t plist_class, const std::string& where) {
  Handle p(check_id(H5Pcreate(plist_class), "create properties for", where));
  check(H5Pset_obj_track_times(p.id(), 0), "set properties for", where);
  return p;
}

// Every path component of `name` below `group` must be a hard link: wit writes no other kind,
// and a soft or external link in a file another party handed over would lead a reader to other
// objects or to another file on the reader's machine.
void require_hard_links(hid_t group, const std::string& name, const std::string& file,
                        const std::string& group_path) {
  const std::string where = file + ":" + group_path;
  std::string prefix = name.rfind('/', 0) == 0 ? "/" : "";  // absolute paths from the root
  size_t start = 0;
  while (start <= name.size()) {
    const size_t slash = name.find('/', start);
    const std::string part =
        name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty()) {
      prefix += (prefix.empty() || prefix.back() == '/' ? "" : "/") + part;
#if H5_VERSION_GE(1, 12, 0)
      H5L_info2_t info{};
      if (H5Lget_info2(group, prefix.c_str(), &info, H5P_DEFAULT) < 0)
#else
      H5L_info_t info{};
      if (H5Lget_info(group, prefix.c_str(), &info, H5P_DEFAULT) < 0)
#endif
        fail_h5(fmt::format("look up '{}' in", prefix), where);
      if (info.type != H5L_TYPE_HARD)
        fail("HDF5: {}:{} is {}, not an object of the file: wit's files hold none (a damaged "
             "file, or one made to read elsewhere)",
             file,
             prefix[0] == '/'    ? prefix
             : group_path == "/" ? "/" + prefix
                                 : group_path + "/" + prefix,
             info.type == H5L_TYPE_SOFT       ? "a soft link"
             : info.type == H5L_TYPE_EXTERNAL ? "an external link (to another file)"
                                              : "a user-defined link");
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
}

// A dataset's values must be stored in its own file, unfiltered, as wit writes them: external
// storage or a virtual dataset would make a reader read other files (and echo their bytes in
// its messages), and a filter would load a plugin named by the file.
void require_stored_inside(hid_t dataset, const std::string& where) {
  Handle dcpl(check_id(H5Dget_create_plist(dataset), "get the storage properties of", where));
  const H5D_layout_t layout = H5Pget_layout(dcpl.id());
  if (layout == H5D_VIRTUAL)
    fail("HDF5: {} is a virtual dataset, whose values live in other files: wit's files hold "
         "their values themselves",
         where);
  if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT)
    fail_h5("get the storage layout of", where);
  const int external = H5Pget_external_count(dcpl.id());
  if (external < 0) fail_h5("get the external storage of", where);
  if (external > 0)
    fail("HDF5: {} keeps its values in {} external file(s): wit's files hold their values "
         "themselves",
         where, external);
  const int filters = H5Pget_nfilters(dcpl.id());
  if (filters < 0) fail_h5("get the filters of", where);
  if (filters > 0)
    fail("HDF5: {} is stored through {} filter(s) (compression or other): wit writes none",
         where, filters);
}

}  // namespace

Group Group::create_group(const std::string& name) {
  std::string path = child_path(name);
  Handle lcpl = intermediate_groups_lcpl(file_ + ":" + path);
  Handle gcpl = creation_props(H5P_GROUP_CREATE, file_ + ":" + path);
  hid_t g = H5Gcreate2(id(), name.c_str(), lcpl.id(), gcpl.id(), H5P_DEFAULT);
  if (g < 0) fail_h5("create group", file_ + ":" + path);
  return Group(Handle(g), file_, path);
}

Group Group::open_group(const std::string& name) const {
  std::string path = child_path(name);
  if (!exists(name)) fail("HDF5: {} has no group '{}'", file_, path);
  require_hard_links(id(), name, file_, object_path());
  hid_t g = H5Gopen2(id(), name.c_str(), H5P_DEFAULT);
  if (g < 0) fail_h5("open group", file_ + ":" + path);
  return Group(Handle(g), file_, path);
}

std::vector<std::string> Group::member_names() const {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  hsize_t at = 0;
  check(H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, &at, collect, &names), "list the members of",
        where());
  return names;
}

bool Group::is_group(const std::string& name) const {
  require_hard_links(id(), name, file_, object_path());
  H5O_info_t info{};
#if H5_VERSION_GE(1, 12, 0)
  if (H5Oget_info_by_name3(id(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
#else
  if (H5Oget_info_by_name2(id(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
#endif
    fail_h5(fmt::format("look up '{}' in", name), where());
  return info.type == H5O_TYPE_GROUP;
}

bool Group::exists(const std::string& name) const {
  // H5Lexists fails rather than answering false when an intermediate link is missing, so walk
  // the path one component at a time.
  std::string prefix;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    std::string part =
        name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty()) {
      prefix += (prefix.empty() ? "" : "/") + part;
      htri_t e = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
      if (e < 0) fail_h5(fmt::format("look up '{}' in", prefix), where());
      if (e == 0) return false;
      // Looking below it traverses it: an external link there would make libhdf5 open a path
      // the file names (a FIFO, a device) before any check; only hard links are walked.
      if (slash != std::string::npos) require_hard_links(id(), prefix, file_, object_path());
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return !prefix.empty();
}

void Group::remove(const std::string& name) {
  std::string path = child_path(name);
  if (!exists(name)) fail("HDF5: cannot remove {}:{}: no such object", file_, path);
  check(H5Ldelete(id(), name.c_str(), H5P_DEFAULT), "remove", file_ + ":" + path);
}

Dataset Group::open_dataset(const std::string& name) const {
  std::string path = child_path(name);
  if (!exists(name)) fail("HDF5: {} has no dataset '{}'", file_, path);
  require_hard_links(id(), name, file_, object_path());
  hid_t d = H5Dopen2(id(), name.c_str(), H5P_DEFAULT);
  if (d < 0) fail_h5("open dataset", file_ + ":" + path);
  Dataset opened(Handle(d), file_, path);
  require_stored_inside(opened.id(), file_ + ":" + path);
  return opened;
}

Dataset Group::write_1d(const std::string& name, Element type, const void* data, size_t n) {
  std::string w = file_ + ":" + child_path(name);
  hsize_t dims[1] = {n};
  Handle space(check_id(H5Screate_simple(1, dims, nullptr), "create a dataspace for", w));
  Handle lcpl = intermediate_groups_lcpl(w);
  Handle dcpl = creation_props(H5P_DATASET_CREATE, w);
  Handle d(H5Dcreate2(id(), name.c_str(), file_type(type), space.id(), lcpl.id(), dcpl.id(),
                      H5P_DEFAULT));
  if (!d.valid()) fail_h5("create dataset", w);
  // HDF5 refuses a null buffer even for zero elements.
  if (n > 0)
    check(H5Dwrite(d.id(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write", w);
  return Dataset(std::move(d), file_, child_path(name));
}

Dataset Group::write_digests(const std::string& name, const std::vector<Digest>& digests) {
  std::string w = file_ + ":" + child_path(name);
  hsize_t dims[2] = {digests.size(), 32};
  Handle space(check_id(H5Screate_simple(2, dims, nullptr), "create a dataspace for", w));
  Handle lcpl = intermediate_groups_lcpl(w);
  Handle dcpl = creation_props(H5P_DATASET_CREATE, w);
  Handle d(
      H5Dcreate2(id(), name.c_str(), H5T_STD_U8LE, space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT));
  if (!d.valid()) fail_h5("create dataset", w);
  if (!digests.empty())
    check(H5Dwrite(d.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, digests.data()),
          "write", w);
  return Dataset(std::move(d), file_, child_path(name));
}

std::vector<Digest> Group::read_digests(const std::string& name) const {
  return open_dataset(name).read_digests();
}

Dataset Group::write_strings(const std::string& name, const std::vector<std::string>& strings) {
  std::string w = file_ + ":" + child_path(name);
  size_t width = 1;
  for (auto& s : strings) width = std::max(width, s.size());
  Handle type = fixed_string_type(width, w);
  hsize_t dims[1] = {strings.size()};
  Handle space(check_id(H5Screate_simple(1, dims, nullptr), "create a dataspace for", w));
  Handle lcpl = intermediate_groups_lcpl(w);
  Handle dcpl = creation_props(H5P_DATASET_CREATE, w);
  Handle d(
      H5Dcreate2(id(), name.c_str(), type.id(), space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT));
  if (!d.valid()) fail_h5("create dataset", w);
  std::string buffer(strings.size() * width, '\0');
  for (size_t i = 0; i < strings.size(); ++i) buffer.replace(i * width, strings[i].size(), strings[i]);
  if (!strings.empty())
    check(H5Dwrite(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()), "write", w);
  return Dataset(std::move(d), file_, child_path(name));
}

std::vector<std::string> Group::read_strings(const std::string& name) const {
  return open_dataset(name).read_strings();
}

Dataset Group::create_extendible(const std::string& name, Element type, uint64_t width,
                                 size_t chunk_rows) {
  std::string w = file_ + ":" + child_path(name);
  if (chunk_rows == 0) fail("HDF5: cannot create {}: chunk_rows must be at least 1", w);
  int rank = width == 1 ? 1 : 2;
  hsize_t dims[2] = {0, width}, max_dims[2] = {H5S_UNLIMITED, width};
  hsize_t chunk[2] = {chunk_rows, width};
  Handle space(check_id(H5Screate_simple(rank, dims, max_dims), "create a dataspace for", w));
  Handle dcpl = creation_props(H5P_DATASET_CREATE, w);
  check(H5Pset_chunk(dcpl.id(), rank, chunk), "set the chunk shape of", w);
  Handle lcpl = intermediate_groups_lcpl(w);
  Handle d(H5Dcreate2(id(), name.c_str(), file_type(type), space.id(), lcpl.id(), dcpl.id(),
                      H5P_DEFAULT));
  if (!d.valid()) fail_h5("create dataset", w);
  return Dataset(std::move(d), file_, child_path(name));
}

Dataset Group::create_digest_series(const std::string& name, size_t chunk_rows) {
  return create_extendible(name, Element::U8, 32, chunk_rows);
}

Dataset Group::create_fixed_string_series(const std::string& name, size_t width,
                                          size_t chunk_rows) {
  std::string w = file_ + ":" + child_path(name);
  if (chunk_rows == 0 || width == 0) fail("HDF5: cannot create {}: zero width or chunk", w);
  Handle type(check_id(H5Tcopy(H5T_C_S1), "copy the string type for", w));
  check(H5Tset_size(type.id(), width), "set the string size of", w);
  check(H5Tset_strpad(type.id(), H5T_STR_NULLPAD), "set the string padding of", w);
  check(H5Tset_cset(type.id(), H5T_CSET_UTF8), "set the character set of", w);
  hsize_t dims[1] = {0}, max_dims[1] = {H5S_UNLIMITED}, chunk[1] = {chunk_rows};
  Handle space(check_id(H5Screate_simple(1, dims, max_dims), "create a dataspace for", w));
  Handle dcpl = creation_props(H5P_DATASET_CREATE, w);
  check(H5Pset_chunk(dcpl.id(), 1, chunk), "set the chunk shape of", w);
  Handle lcpl = intermediate_groups_lcpl(w);
  Handle d(
      H5Dcreate2(id(), name.c_str(), type.id(), space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT));
  if (!d.valid()) fail_h5("create dataset", w);
  return Dataset(std::move(d), file_, child_path(name));
}

// ---------------------------------------------------------------------------------------------
// File

File::File(Handle h, const fs::path& path)
    : Group(std::move(h), path.string(), "/"), fs_path_(path) {}

File File::create(const fs::path& path) {
  silence_hdf5();
  // The latest format checksums every piece of metadata: a damaged file fails to read rather
  // than being misread.
  Handle fapl(
      check_id(H5Pcreate(H5P_FILE_ACCESS), "create file access properties for", path.string()));
  check(H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST),
        "select the latest file format for", path.string());
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id());
  if (f < 0) fail_h5("create file", path.string());
  return File(Handle(f), path);
}

// create's file already has the latest format, which SWMR needs.
File File::create_live(const fs::path& path) { return create(path); }

void File::start_live_writing() {
  check(H5Fstart_swmr_write(id()), "start single-writer/multiple-reader mode on", where());
}

File File::open_live_write(const fs::path& path) {
  silence_hdf5();
  Handle fapl(
      check_id(H5Pcreate(H5P_FILE_ACCESS), "create file access properties for", path.string()));
  check(H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST),
        "select the latest file format for", path.string());
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl.id());
  if (f < 0) fail_h5("open for live writing", path.string());
  return File(Handle(f), path);
}

File File::open_read_live(const fs::path& path) {
  check_openable(path);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) return File(Handle(f), path);
  // Marked as being written (a live writer, or one that crashed): read it as SWMR does, with few
  // metadata read attempts (HDF5's default of 100 retries a damaged file for minutes).
  H5Eclear2(H5E_DEFAULT);
  Handle fapl(
      check_id(H5Pcreate(H5P_FILE_ACCESS), "create file access properties for", path.string()));
  check(H5Pset_metadata_read_attempts(fapl.id(), kLiveReadAttempts),
        "bound the metadata read attempts for", path.string());
  f = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.id());
  if (f < 0) fail_h5("open", path.string());
  return File(Handle(f), path);
}

void File::check_openable(const fs::path& path) {
  silence_hdf5();
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("cannot open {}: no such file", path.string());
  if (fs::is_directory(path, ec)) fail("cannot open {}: it is a directory", path.string());
  if (!fs::is_regular_file(path, ec))
    fail("cannot open {}: not a regular file (a FIFO or device is never read as one)",
         path.string());
#if H5_VERSION_GE(1, 12, 0)
  htri_t is_hdf5 = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
#endif
  if (is_hdf5 < 0) fail_h5("read", path.string());
  if (is_hdf5 == 0) fail("cannot open {}: not an HDF5 file", path.string());
}

File File::open(const fs::path& path, unsigned flags) {
  const bool writable = (flags & H5F_ACC_RDWR) != 0;
  check_openable(path);
  hid_t f = H5Fopen(path.c_str(), flags, H5P_DEFAULT);
  if (f < 0) fail_h5(writable ? "open for writing" : "open", path.string());
  return File(Handle(f), path);
}

File File::open_read(const fs::path& path) { return open(path, H5F_ACC_RDONLY); }
File File::open_rw(const fs::path& path) { return open(path, H5F_ACC_RDWR); }

void File::flush() { check(H5Fflush(id(), H5F_SCOPE_GLOBAL), "flush", where()); }

}  // namespace wit::h5
