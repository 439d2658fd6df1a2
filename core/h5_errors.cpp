// The HDF5 wrapper's errors: HDF5's error stack turned into one line of a wit::Error.
#include "core/h5_detail.h"

#include <fmt/format.h>

namespace wit::h5 {

namespace {

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

}  // namespace

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

}  // namespace wit::h5
