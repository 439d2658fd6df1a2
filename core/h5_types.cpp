// The HDF5 wrapper's element types (stored little-endian), strings and shapes.
#include "core/h5_detail.h"

#include <fmt/format.h>

namespace wit::h5 {

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

}  // namespace wit::h5
