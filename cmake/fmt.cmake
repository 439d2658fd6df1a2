# One fmt in every binary: the fmt headers the libtorch in use ships and was compiled against,
# header-only. A translation unit that sees torch's include directory gets those headers whatever
# else is on the path, so another fmt's library linked beside them would mismatch at link time
# (or worse, at run time). wit links no fmt library at all.
#
#   WIT_FMT_INCLUDE_DIR   the directory holding fmt/base.h (default: libtorch's include directory)
#
# Defines the INTERFACE target wit_fmt: an include directory that holds fmt/ and nothing else,
# and FMT_HEADER_ONLY.
set(WIT_FMT_INCLUDE_DIR "${WIT_FMT_INCLUDE_DIR}" CACHE PATH "Directory holding fmt/base.h (libtorch's include dir)")
if(NOT WIT_FMT_INCLUDE_DIR AND TORCH_INSTALL_PREFIX)
  set(WIT_FMT_INCLUDE_DIR "${TORCH_INSTALL_PREFIX}/include" CACHE PATH "" FORCE)
endif()
if(NOT EXISTS "${WIT_FMT_INCLUDE_DIR}/fmt/base.h")
  message(FATAL_ERROR "wit: no fmt/base.h in WIT_FMT_INCLUDE_DIR='${WIT_FMT_INCLUDE_DIR}': point it "
                      "at libtorch's include directory (launch/build does)")
endif()
file(STRINGS "${WIT_FMT_INCLUDE_DIR}/fmt/base.h" _wit_fmt_version REGEX "^#define FMT_VERSION ")
string(REGEX REPLACE "[^0-9]" "" _wit_fmt_version "${_wit_fmt_version}")
message(STATUS "wit: fmt ${_wit_fmt_version} header-only, from ${WIT_FMT_INCLUDE_DIR}/fmt")
# fmt/ alone on the include path, so non-torch targets see no other torch header.
set(_wit_fmt_dir "${CMAKE_BINARY_DIR}/fmt-include")
file(MAKE_DIRECTORY "${_wit_fmt_dir}")
file(CREATE_LINK "${WIT_FMT_INCLUDE_DIR}/fmt" "${_wit_fmt_dir}/fmt" SYMBOLIC)
add_library(wit_fmt INTERFACE)
target_include_directories(wit_fmt SYSTEM BEFORE INTERFACE "${_wit_fmt_dir}")
target_compile_definitions(wit_fmt INTERFACE FMT_HEADER_ONLY=1)
