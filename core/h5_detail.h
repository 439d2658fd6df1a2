// Internals of the HDF5 wrapper shared by its files (core/h5_*.cpp); nothing else includes this.
#pragma once

#include <hdf5.h>

#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/h5.h"

namespace wit::h5 {

static_assert(std::is_same_v<hid_t, int64_t>, "wit::h5 stores hid_t as int64_t");
static_assert(sizeof(Digest) == 32, "digests are read and written as contiguous rows of 32 bytes");

// Errors (h5_errors.cpp): every C call goes through check()/check_id(), which turn a failure into
// wit::Error carrying the operation, the object and HDF5's error stack.
std::string error_stack();
[[noreturn]] void fail_h5(const std::string& operation, const std::string& where);
hid_t check_id(hid_t id, const char* operation, const std::string& where);
void check(herr_t rc, const char* operation, const std::string& where);
void silence_hdf5();

// Element types, strings and shapes (h5_types.cpp).
hid_t memory_type(Element e);
hid_t file_type(Element e);  // little-endian whatever the host
const char* element_name(Element e);
bool is_float(Element e);
void check_class(hid_t type_id, Element wanted, const std::string& where);
Handle fixed_string_type(size_t width, const std::string& where);
std::string unpad(const char* data, size_t size, H5T_str_t pad);
std::vector<uint64_t> space_dims(hid_t space, const std::string& where);
std::string shape_text(const std::vector<uint64_t>& dims);

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

}  // namespace wit::h5
