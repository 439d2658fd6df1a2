// HDF5 wrapper implementation: every C call goes through check()/check_id(), which turn a
// failure into wit::Error carrying the operation, the object and HDF5's error stack.
#include "core/h5.h"

#include <fmt/format.h>
#include <hdf5.h>

#include <type_traits>

#include "core/error.h"

namespace wit::h5 {

static_assert(std::is_same_v<hid_t, int64_t>, "wit::h5 stores hid_t as int64_t");
static_assert(sizeof(Digest) == 32, "digests are read and written as contiguous rows of 32 bytes");

namespace {

// ---------------------------------------------------------------------------------------------
// Errors

herr_t collect_error(unsigned, const H5E_error2_t* e, void* data) {
  auto* lines = static_cast<std::vector<std::string>*>(data);
  std::string desc = e->desc ? e->desc : "";
  if (desc.empty()) {
    char minor[256] = "";
    H5Eget_msg(e->min_num, nullptr, minor, sizeof minor);
    desc = minor;
  }
  // Some messages carry newlines (H5F_open's timestamp); errors are one line.
  for (char& c : desc)
    if (c == '\n' || c == '\r') c = ' ';
  lines->push_back((e->func_name ? std::string(e->func_name) + "(): " : std::string()) + desc);
  return 0;
}

// HDF5's error stack as one line: the call that failed and the innermost cause, which is where
// the useful text is ("name already exists", "errno = 2, ... No such file or directory").
// The stack is cleared afterwards.
std::string error_stack() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &lines);
  H5Eclear2(H5E_DEFAULT);
  if (lines.empty()) return "no HDF5 error message";
  if (lines.size() == 1) return lines[0];
  return lines.front() + " ... " + lines.back();
}

[[noreturn]] void fail_h5(const std::string& operation, const std::string& where) {
  fail("HDF5: cannot {} {}: {}", operation, where, error_stack());
}

hid_t check_id(hid_t id, const char* operation, const std::string& where) {
  if (id < 0) fail_h5(operation, where);
  return id;
}

void check(herr_t rc, const char* operation, const std::string& where) {
  if (rc < 0) fail_h5(operation, where);
}

// HDF5 prints every error to stderr by default; we report them through exceptions instead.
void silence_hdf5() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

// ---------------------------------------------------------------------------------------------
// Types

hid_t memory_type(Element e) {
  switch (e) {
    case Element::U8:
      return H5T_NATIVE_UINT8;
    case Element::U32:
      return H5T_NATIVE_UINT32;
    case Element::U64:
      return H5T_NATIVE_UINT64;
    case Element::I64:
      return H5T_NATIVE_INT64;
    case Element::F32:
      return H5T_NATIVE_FLOAT;
    case Element::F64:
      return H5T_NATIVE_DOUBLE;
  }
  return -1;
}

// Stored little-endian whatever the host, so files are byte-identical across machines.
hid_t file_type(Element e) {
  switch (e) {
    case Element::U8:
      return H5T_STD_U8LE;
    case Element::U32:
      return H5T_STD_U32LE;
    case Element::U64:
      return H5T_STD_U64LE;
    case Element::I64:
      return H5T_STD_I64LE;
    case Element::F32:
      return H5T_IEEE_F32LE;
    case Element::F64:
      return H5T_IEEE_F64LE;
  }
  return -1;
}

const char* element_name(Element e) {
  switch (e) {
    case Element::U8:
      return "uint8";
    case Element::U32:
      return "uint32";
    case Element::U64:
      return "uint64";
    case Element::I64:
      return "int64";
    case Element::F32:
      return "float32";
    case Element::F64:
      return "float64";
  }
  return "?";
}

bool is_float(Element e) { return e == Element::F32 || e == Element::F64; }

// HDF5 converts between numeric types on read; we refuse integer <-> float conversions, which
// would mean the file holds something other than what the reader expects.
void check_class(hid_t type_id, Element wanted, const std::string& where) {
  H5T_class_t cls = H5Tget_class(type_id);
  if (cls == H5T_NO_CLASS) fail_h5("get the type class of", where);
  H5T_class_t expected = is_float(wanted) ? H5T_FLOAT : H5T_INTEGER;
  if (cls != expected)
    fail("HDF5: {} holds {} values, expected {}", where,
         cls == H5T_STRING    ? "string"
         : cls == H5T_INTEGER ? "integer"
         : cls == H5T_FLOAT   ? "floating-point"
                              : "non-numeric",
         element_name(wanted));
}

Handle fixed_string_type(size_t width, const std::string& where) {
  Handle t(check_id(H5Tcopy(H5T_C_S1), "copy the string type for", where));
  check(H5Tset_size(t.id(), std::max<size_t>(width, 1)), "set the string size of", where);
  check(H5Tset_strpad(t.id(), H5T_STR_NULLPAD), "set the string padding of", where);
  check(H5Tset_cset(t.id(), H5T_CSET_UTF8), "set the character set of", where);
  return t;
}

// Turns a fixed-length HDF5 string (padded with NULs or spaces) into its text.
std::string unpad(const char* data, size_t size, H5T_str_t pad) {
  size_t n = 0;
  while (n < size && data[n] != '\0') ++n;
  if (pad == H5T_STR_SPACEPAD)
    while (n > 0 && data[n - 1] == ' ') --n;
  return std::string(data, n);
}

// Reads n strings of file type `ftype` from a dataset or attribute through `read(memtype, buf)`.
template <typename ReadFn>
std::vector<std::string> read_string_values(hid_t ftype, size_t n, const std::string& file,
                                            const std::string& where, ReadFn read) {
  if (H5Tget_class(ftype) != H5T_STRING) fail("HDF5: {} does not hold strings", where);
  std::vector<std::string> out;
  out.reserve(n);
  if (n == 0) return out;
  htri_t variable = H5Tis_variable_str(ftype);
  if (variable < 0) fail_h5("inspect the string type of", where);
  if (variable) {
    // Variable-length strings live in a heap HDF5 does not checksum: a damaged one can crash
    // the library. wit writes only fixed-length strings and reads nothing else.
    fail("HDF5: {} holds variable-length strings; wit writes and reads fixed-length ones only "
         "(a damaged file, or one not written by wit)",
         where);
  } else {
    size_t size = H5Tget_size(ftype);
    if (size == 0) fail_h5("get the string size of", where);
    std::error_code ec;
    const uint64_t file_bytes = fs::file_size(file, ec);
    if (!ec && n > std::max<uint64_t>(file_bytes, 1 << 20) / size)
      fail("HDF5: {} claims {} strings of {} bytes, more than its file can hold (damaged file)",
           where, n, size);
    Handle mtype(check_id(H5Tcopy(ftype), "copy the string type of", where));
    std::vector<char> buffer(n * size);
    check(read(mtype.id(), buffer.data()), "read strings from", where);
    H5T_str_t pad = H5Tget_strpad(ftype);
    for (size_t i = 0; i < n; ++i) out.push_back(unpad(buffer.data() + i * size, size, pad));
  }
  return out;
}

std::vector<uint64_t> space_dims(hid_t space, const std::string& where) {
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail_h5("get the rank of", where);
  std::vector<hsize_t> dims(rank);
  if (rank > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0)
    fail_h5("get the shape of", where);
  return std::vector<uint64_t>(dims.begin(), dims.end());
}

std::string shape_text(const std::vector<uint64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Handle

Handle::~Handle() { reset(); }

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    other.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  // H5Idec_ref closes the object (file, group, dataset, type, space, ...) when the count drops
  // to zero; a failure here (e.g. after the library shut down at exit) has nowhere to go.
  if (id_ >= 0) H5Idec_ref(id_);
  id_ = -1;
}

// ---------------------------------------------------------------------------------------------
// Object: attributes

std::string Object::where() const { return file_ + ":" + path_; }

std::string Object::child_path(const std::string& name) const {
  if (!name.empty() && name[0] == '/') return name;
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

namespace {

void delete_attr_if_present(hid_t obj, const std::string& name, const std::string& where) {
  htri_t exists = H5Aexists(obj, name.c_str());
  if (exists < 0) fail_h5(fmt::format("look up attribute '{}' of", name), where);
  if (exists && H5Adelete(obj, name.c_str()) < 0)
    fail_h5(fmt::format("replace attribute '{}' of", name), where);
}

Handle open_attr(hid_t obj, const std::string& name, const std::string& where) {
  htri_t exists = H5Aexists(obj, name.c_str());
  if (exists < 0) fail_h5(fmt::format("look up attribute '{}' of", name), where);
  if (!exists) fail("HDF5: {} has no attribute '{}'", where, name);
  hid_t id = H5Aopen(obj, name.c_str(), H5P_DEFAULT);
  if (id < 0) fail_h5(fmt::format("open attribute '{}' of", name), where);
  return Handle(id);
}

}  // namespace

void Object::set_string_attr(const std::string& name, const std::string& value) {
  std::string w = where();
  delete_attr_if_present(id(), name, w);
  Handle type = fixed_string_type(value.size(), w);
  Handle space(check_id(H5Screate(H5S_SCALAR), "create a dataspace for", w));
  Handle attr(H5Acreate2(id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid()) fail_h5(fmt::format("create attribute '{}' on", name), w);
  std::string stored = value;
  stored.resize(std::max<size_t>(value.size(), 1), '\0');
  if (H5Awrite(attr.id(), type.id(), stored.data()) < 0)
    fail_h5(fmt::format("write attribute '{}' on", name), w);
}

void Object::write_scalar_attr(const std::string& name, Element type, const void* value) {
  std::string w = where();
  delete_attr_if_present(id(), name, w);
  Handle space(check_id(H5Screate(H5S_SCALAR), "create a dataspace for", w));
  Handle attr(
      H5Acreate2(id(), name.c_str(), file_type(type), space.id(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid()) fail_h5(fmt::format("create attribute '{}' on", name), w);
  if (H5Awrite(attr.id(), memory_type(type), value) < 0)
    fail_h5(fmt::format("write attribute '{}' on", name), w);
}

void Object::set_int_attr(const std::string& name, int64_t value) {
  write_scalar_attr(name, Element::I64, &value);
}
void Object::set_uint_attr(const std::string& name, uint64_t value) {
  write_scalar_attr(name, Element::U64, &value);
}
void Object::set_double_attr(const std::string& name, double value) {
  write_scalar_attr(name, Element::F64, &value);
}

bool Object::has_attr(const std::string& name) const {
  htri_t exists = H5Aexists(id(), name.c_str());
  if (exists < 0) fail_h5(fmt::format("look up attribute '{}' of", name), where());
  return exists > 0;
}

std::vector<std::string> Object::attribute_names() const {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  hsize_t at = 0;
  check(H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_INC, &at, collect, &names), "list attributes of",
        where());
  return names;
}

void Object::read_scalar_attr(const std::string& name, Element type, void* value) const {
  std::string w = where();
  Handle attr = open_attr(id(), name, w);
  std::string what = fmt::format("attribute '{}' of {}", name, w);
  Handle ftype(check_id(H5Aget_type(attr.id()), "get the type of", what));
  check_class(ftype.id(), type, what);
  Handle space(check_id(H5Aget_space(attr.id()), "get the dataspace of", what));
  hssize_t n = H5Sget_simple_extent_npoints(space.id());
  if (n != 1) fail("HDF5: {} holds {} values, expected one", what, n);
  if (H5Aread(attr.id(), memory_type(type), value) < 0) fail_h5("read", what);
}

std::string Object::string_attr(const std::string& name) const {
  std::string w = where();
  Handle attr = open_attr(id(), name, w);
  std::string what = fmt::format("attribute '{}' of {}", name, w);
  Handle ftype(check_id(H5Aget_type(attr.id()), "get the type of", what));
  Handle space(check_id(H5Aget_space(attr.id()), "get the dataspace of", what));
  hssize_t n = H5Sget_simple_extent_npoints(space.id());
  if (n != 1) fail("HDF5: {} holds {} values, expected one string", what, n);
  auto values = read_string_values(ftype.id(), 1, file_, what, [&](hid_t mtype, void* buf) {
    return H5Aread(attr.id(), mtype, buf);
  });
  return values[0];
}

int64_t Object::int_attr(const std::string& name) const {
  int64_t v = 0;
  read_scalar_attr(name, Element::I64, &v);
  return v;
}
uint64_t Object::uint_attr(const std::string& name) const {
  uint64_t v = 0;
  read_scalar_attr(name, Element::U64, &v);
  return v;
}
double Object::double_attr(const std::string& name) const {
  double v = 0;
  read_scalar_attr(name, Element::F64, &v);
  return v;
}

std::string library_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return fmt::format("HDF5 {}.{}.{}", major, minor, release);
}

// ---------------------------------------------------------------------------------------------
// Dataset

std::vector<uint64_t> Dataset::shape() const {
  Handle space(check_id(H5Dget_space(id()), "get the dataspace of", where()));
  return space_dims(space.id(), where());
}

uint64_t Dataset::rows() const {
  std::vector<uint64_t> dims = shape();
  if (dims.empty()) fail("HDF5: {} is a scalar, expected rows", where());
  return dims[0];
}

uint64_t Dataset::rows_of_1d() const {
  std::vector<uint64_t> dims = shape();
  if (dims.size() != 1)
    fail("HDF5: {} has shape {}, expected a 1-D dataset", where(), shape_text(dims));
  return dims[0];
}

void Dataset::read_all(Element type, void* out) const {
  Handle ftype(check_id(H5Dget_type(id()), "get the type of", where()));
  check_class(ftype.id(), type, where());
  if (rows_of_1d() == 0) return;
  check(H5Dread(id(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out), "read", where());
}

void Dataset::read_range(Element type, uint64_t first, uint64_t count, uint64_t width,
                         void* out) const {
  std::vector<uint64_t> dims = shape();
  bool shape_ok = width == 1 ? dims.size() == 1 : dims.size() == 2 && dims[1] == width;
  if (!shape_ok)
    fail("HDF5: {} has shape {}, expected {}", where(), shape_text(dims),
         width == 1 ? std::string("a 1-D dataset") : fmt::format("(n, {})", width));
  if (first > dims[0] || count > dims[0] - first)
    fail("HDF5: cannot read rows [{}, {}) of {}: it has {} rows", first, first + count, where(),
         dims[0]);
  Handle ftype(check_id(H5Dget_type(id()), "get the type of", where()));
  check_class(ftype.id(), type, where());
  if (count == 0) return;
  hsize_t start[2] = {first, 0}, extent[2] = {count, width};
  int rank = int(dims.size());
  Handle fspace(check_id(H5Dget_space(id()), "get the dataspace of", where()));
  check(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, start, nullptr, extent, nullptr),
        "select rows of", where());
  Handle mspace(
      check_id(H5Screate_simple(rank, extent, nullptr), "create a dataspace for", where()));
  check(H5Dread(id(), memory_type(type), mspace.id(), fspace.id(), H5P_DEFAULT, out),
        "read rows of", where());
}

std::vector<Digest> Dataset::read_digests() const {
  std::vector<uint64_t> dims = shape();
  if (dims.size() != 2 || dims[1] != 32)
    fail("HDF5: {} has shape {}, expected (n, 32) digests", where(), shape_text(dims));
  return read_digest_rows(0, dims[0]);
}

std::vector<Digest> Dataset::read_digest_rows(uint64_t first, uint64_t count) const {
  check_read_size(count, 32);
  std::vector<Digest> out(count);
  read_range(Element::U8, first, count, 32, out.data());
  return out;
}

std::vector<std::string> Dataset::read_strings() const {
  uint64_t n = rows_of_1d();
  check_read_size(n, sizeof(char*));
  Handle ftype(check_id(H5Dget_type(id()), "get the type of", where()));
  Handle space(check_id(H5Dget_space(id()), "get the dataspace of", where()));
  return read_string_values(ftype.id(), n, file_, where(), [&](hid_t mtype, void* buf) {
    return H5Dread(id(), mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  });
}

std::vector<std::string> Dataset::read_fixed_string_bytes(size_t width) const {
  const uint64_t n = rows_of_1d();
  Handle ftype(check_id(H5Dget_type(id()), "get the type of", where()));
  if (H5Tget_class(ftype.id()) != H5T_STRING || H5Tis_variable_str(ftype.id()) != 0 ||
      H5Tget_size(ftype.id()) != width)
    fail("HDF5: {} does not hold fixed-length strings of {} bytes", where(), width);
  check_read_size(n, width);
  std::vector<char> buffer(n * width);
  if (n > 0) {
    Handle mtype(check_id(H5Tcopy(ftype.id()), "copy the string type of", where()));
    check(H5Dread(id(), mtype.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()), "read",
          where());
  }
  std::vector<std::string> out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) out.emplace_back(buffer.data() + i * width, width);
  return out;
}

void Dataset::check_read_size(uint64_t rows, uint64_t row_bytes) const {
  // A damaged or hostile file can claim any shape; unwritten chunks read as fill values, so the
  // claim is bounded by what the file could hold, not by what HDF5 would return.
  std::error_code ec;
  const uint64_t file_bytes = fs::file_size(file_, ec);
  const uint64_t limit = ec ? (uint64_t(1) << 32) : std::max<uint64_t>(file_bytes, 1 << 20);
  if (row_bytes != 0 && rows > limit / row_bytes)
    fail("HDF5: {} claims {} rows of {} bytes, more than its file of {} bytes can hold "
         "(damaged file)",
         where(), rows, row_bytes, file_bytes);
}

void Dataset::append_raw(Element type, const void* rows, size_t count, uint64_t width) {
  std::vector<uint64_t> dims = shape();
  bool shape_ok = width == 1 ? dims.size() == 1 : dims.size() == 2 && dims[1] == width;
  if (!shape_ok)
    fail("HDF5: cannot append rows of width {} to {}, which has shape {}", width, where(),
         shape_text(dims));
  Handle ftype(check_id(H5Dget_type(id()), "get the type of", where()));
  check_class(ftype.id(), type, where());
  if (count == 0) return;
  int rank = int(dims.size());
  hsize_t grown[2] = {dims[0] + count, width};
  check(H5Dset_extent(id(), grown), "extend (is it a series made by create_series?)", where());
  hsize_t start[2] = {dims[0], 0}, extent[2] = {count, width};
  Handle fspace(check_id(H5Dget_space(id()), "get the dataspace of", where()));
  check(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, start, nullptr, extent, nullptr),
        "select new rows of", where());
  Handle mspace(
      check_id(H5Screate_simple(rank, extent, nullptr), "create a dataspace for", where()));
  check(H5Dwrite(id(), memory_type(type), mspace.id(), fspace.id(), H5P_DEFAULT, rows),
        "append rows to", where());
}

uint64_t Dataset::width() const {
  std::vector<uint64_t> dims = shape();
  return dims.size() >= 2 ? dims[1] : 1;
}

void Dataset::overwrite_raw(Element type, uint64_t first, const void* rows, size_t count,
                            uint64_t width) {
  std::vector<uint64_t> dims = shape();
  bool shape_ok = width == 1 ? dims.size() == 1 : dims.size() == 2 && dims[1] == width;
  if (!shape_ok || first > dims[0] || count > dims[0] - first)
    fail("HDF5: cannot overwrite rows [{}, {}) of width {} in {}, which has shape {}", first,
         first + count, width, where(), shape_text(dims));
  if (count == 0) return;
  hsize_t start[2] = {first, 0}, extent[2] = {count, width};
  Handle fspace(check_id(H5Dget_space(id()), "get the dataspace of", where()));
  check(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, start, nullptr, extent, nullptr),
        "select rows of", where());
  Handle mspace(check_id(H5Screate_simple(int(dims.size()), extent, nullptr),
                         "create a dataspace for", where()));
  check(H5Dwrite(id(), memory_type(type), mspace.id(), fspace.id(), H5P_DEFAULT, rows),
        "overwrite rows of", where());
}

void Dataset::set_rows(uint64_t rows) {
  std::vector<uint64_t> dims = shape();
  if (dims.empty()) fail("HDF5: {} is a scalar, it has no rows", where());
  dims[0] = rows;
  std::vector<hsize_t> d(dims.begin(), dims.end());
  check(H5Dset_extent(id(), d.data()), "resize", where());
}

void Dataset::append_fixed_strings(const std::vector<std::string>& rows) {
  std::vector<uint64_t> dims = shape();
  Handle ftype(check_id(H5Dget_type(id()), "get the type of", where()));
  if (dims.size() != 1 || H5Tget_class(ftype.id()) != H5T_STRING ||
      H5Tis_variable_str(ftype.id()) != 0)
    fail("HDF5: cannot append fixed-length strings to {}", where());
  const size_t width = H5Tget_size(ftype.id());
  std::string buf(rows.size() * width, '\0');
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() > width)
      fail("HDF5: cannot append '{}' to {}: longer than its {} bytes", rows[i], where(), width);
    buf.replace(i * width, rows[i].size(), rows[i]);
  }
  if (rows.empty()) return;
  hsize_t grown[1] = {dims[0] + rows.size()};
  check(H5Dset_extent(id(), grown), "extend", where());
  hsize_t start[1] = {dims[0]}, extent[1] = {rows.size()};
  Handle fspace(check_id(H5Dget_space(id()), "get the dataspace of", where()));
  check(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, start, nullptr, extent, nullptr),
        "select new rows of", where());
  Handle mspace(check_id(H5Screate_simple(1, extent, nullptr), "create a dataspace for", where()));
  check(H5Dwrite(id(), ftype.id(), mspace.id(), fspace.id(), H5P_DEFAULT, buf.data()),
        "append rows to", where());
}

void Dataset::append_digests(const std::vector<Digest>& rows) {
  append_raw(Element::U8, rows.data(), rows.size(), 32);
}

void Dataset::flush() { check(H5Fflush(id(), H5F_SCOPE_GLOBAL), "flush", where()); }

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
  hid_t d = H5Dopen2(id(), name.c_str(), H5P_DEFAULT);
  if (d < 0) fail_h5("open dataset", file_ + ":" + path);
  return Dataset(Handle(d), file_, path);
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

File File::create_live(const fs::path& path) {
  silence_hdf5();
  Handle fapl(
      check_id(H5Pcreate(H5P_FILE_ACCESS), "create file access properties for", path.string()));
  check(H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST),
        "select the latest file format for", path.string());
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id());
  if (f < 0) fail_h5("create file", path.string());
  return File(Handle(f), path);
}

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
