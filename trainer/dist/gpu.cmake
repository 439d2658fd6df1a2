# The NCCL backend: wit_dist_nccl (alias wit::dist_nccl), the collectives on GPU buffers. Built
# only where a CUDA compiler, the CUDA toolkit and NCCL are found; elsewhere left out with one
# status line. Included from trainer/dist/CMakeLists.txt once wit_dist exists. Sets the cache
# variable WIT_HAVE_NCCL (ON when built) for the directories configured after this one.
#
#   -DWIT_DISABLE_CUDA=ON             leave it out even where CUDA is installed
#   -DWIT_NCCL_ROOT=/opt/nccl         NCCL's prefix (include/nccl.h, lib/libnccl.so) when it is
#                                     neither beside CUDA nor in a system path
#   -DCMAKE_CUDA_ARCHITECTURES=...    default 80;90: A100, H100/H200, and PTX for newer GPUs
#                                     (a CUDA libtorch sets its own: TORCH_CUDA_ARCH_LIST)
#   -DWIT_REQUIRE_CUDA=ON             a missing piece is an error, not a status line; also
#                                     requires a libtorch with CUDA (launch/build sets it
#                                     wherever nvcc is found)

option(WIT_DISABLE_CUDA "Leave the CUDA/NCCL backend out even where CUDA is installed" OFF)
option(WIT_REQUIRE_CUDA "Fail the configure unless the CUDA path and the NCCL backend are built" OFF)
set(WIT_NCCL_ROOT "$ENV{NCCL_ROOT}" CACHE PATH "NCCL install prefix, when not beside CUDA")
# Decided afresh on every configure.
set(WIT_HAVE_NCCL OFF CACHE INTERNAL "wit_dist_nccl is built")

set(_wit_gpu_missing "")
if(WIT_DISABLE_CUDA)
  set(_wit_gpu_missing "WIT_DISABLE_CUDA is ON")
else()
  include(CheckLanguage)
  check_language(CUDA)
  # check_language takes a compiler given as -DCMAKE_CUDA_COMPILER on trust: a path that does
  # not exist leaves the backend out rather than failing enable_language below.
  if(NOT CMAKE_CUDA_COMPILER
     OR (IS_ABSOLUTE "${CMAKE_CUDA_COMPILER}" AND NOT EXISTS "${CMAKE_CUDA_COMPILER}"))
    set(_wit_gpu_missing "no CUDA compiler")
  endif()
endif()

if(NOT _wit_gpu_missing)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90 CACHE STRING "GPU architectures to compile for")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit)
  if(NOT CUDAToolkit_FOUND)
    set(_wit_gpu_missing "no CUDA toolkit (runtime library) found")
  endif()
endif()

if(NOT _wit_gpu_missing)
  find_path(WIT_NCCL_INCLUDE_DIR nccl.h
    HINTS ${WIT_NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  # The library beside the header first: a wheel's NCCL ships libnccl.so.2 alone, which a plain
  # search for "nccl" passes over for another NCCL installed elsewhere.
  if(WIT_NCCL_ROOT)
    find_library(WIT_NCCL_LIBRARY NAMES nccl libnccl.so.2 PATHS ${WIT_NCCL_ROOT}
      PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
  endif()
  find_library(WIT_NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR}
    PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
  if(NOT WIT_NCCL_INCLUDE_DIR)
    set(_wit_gpu_missing "no nccl.h found; set WIT_NCCL_ROOT")
  elseif(NOT WIT_NCCL_LIBRARY)
    set(_wit_gpu_missing "no libnccl found; set WIT_NCCL_ROOT")
  endif()
endif()

if(NOT _wit_gpu_missing AND NOT TORCH_CUDA_LIBRARIES)
  set(_wit_gpu_missing "this libtorch has no CUDA")
endif()
if(_wit_gpu_missing AND WIT_REQUIRE_CUDA)
  message(FATAL_ERROR "wit: WIT_REQUIRE_CUDA is ON but the NCCL backend cannot be built: ${_wit_gpu_missing}")
endif()
if(_wit_gpu_missing)
  message(STATUS "wit: NCCL backend not built (${_wit_gpu_missing})")
  return()
endif()

file(STRINGS "${WIT_NCCL_INCLUDE_DIR}/nccl.h" _wit_nccl_version
     REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE "[^0-9;]*([0-9]+)[^;]*" "\\1" _wit_nccl_version "${_wit_nccl_version}")
string(REPLACE ";" "." _wit_nccl_version "${_wit_nccl_version}")
if(CMAKE_CUDA_ARCHITECTURES)
  set(_wit_archs "${CMAKE_CUDA_ARCHITECTURES}")
else()
  set(_wit_archs "${TORCH_CUDA_ARCH_LIST} (TORCH_CUDA_ARCH_LIST)")
endif()
message(STATUS "wit: NCCL backend built (CUDA ${CUDAToolkit_VERSION}, NCCL ${_wit_nccl_version}, "
               "GPU architectures ${_wit_archs})")

# A library with CUDA sources: the project's compile options (-Wall -Wextra -ffp-contract=off)
# are gcc's, so nvcc passes them to its host compiler (-Xcompiler); device code does the CPU's
# IEEE arithmetic: no multiply-add contraction (the device side of -ffp-contract=off), no flush of
# subnormals to zero, correctly rounded division and square root; one shared CUDA runtime in the
# process (the one CUDA::cudart and a CUDA libtorch use), not nvcc's default static copy.
function(wit_cuda_target target)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 17 CUDA_RUNTIME_LIBRARY Shared)
  get_target_property(_options ${target} COMPILE_OPTIONS)
  if(_options)
    set(_wrapped "")
    foreach(_option IN LISTS _options)
      list(APPEND _wrapped "$<IF:$<COMPILE_LANGUAGE:CUDA>,-Xcompiler=${_option},${_option}>")
    endforeach()
    set_target_properties(${target} PROPERTIES COMPILE_OPTIONS "${_wrapped}")
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false --ftz=false --prec-div=true --prec-sqrt=true>)
endfunction()

add_library(wit_dist_nccl STATIC cuda_check.cpp device_add.cu nccl_communicator.cpp)
add_library(wit::dist_nccl ALIAS wit_dist_nccl)
target_include_directories(wit_dist_nccl PUBLIC ${WIT_NCCL_INCLUDE_DIR})
# cuda_check.h, for GPU code elsewhere, needs the CUDA and NCCL headers: both are public.
target_link_libraries(wit_dist_nccl PUBLIC wit_dist CUDA::cudart ${WIT_NCCL_LIBRARY})
target_compile_definitions(wit_dist_nccl PUBLIC WIT_HAVE_NCCL=1)
wit_cuda_target(wit_dist_nccl)

set(WIT_HAVE_NCCL ON CACHE INTERNAL "wit_dist_nccl is built")
