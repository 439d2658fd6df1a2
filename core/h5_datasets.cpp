// Datasets: shapes, reads of whole datasets and row ranges, appends to extendible series.
#include "core/h5_detail.h"

#include <fmt/format.h>

namespace wit::h5 {

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
  ReadBudget::charge(rows * row_bytes, where());
}

namespace {
thread_local ReadBudget* current_budget = nullptr;
}  // namespace

ReadBudget::ReadBudget(uint64_t bytes) : limit_(bytes), outer_(current_budget) {
  current_budget = this;
}

ReadBudget::~ReadBudget() { current_budget = outer_; }

void ReadBudget::charge(uint64_t bytes, const std::string& where) {
  ReadBudget* b = current_budget;
  if (!b) return;
  b->used_ += bytes;
  if (b->used_ > b->limit_)
    fail("HDF5: reading {} takes the reader past {} bytes, more than its file holds: a file that "
         "links the same data from many places (damaged or hostile file)",
         where, b->limit_);
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

}  // namespace wit::h5
