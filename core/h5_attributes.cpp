// Handles, and attributes on groups and datasets.
#include "core/h5_detail.h"

#include <fmt/format.h>

namespace wit::h5 {

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

}  // namespace wit::h5
