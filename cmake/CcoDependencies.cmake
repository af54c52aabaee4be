# Finds what ccoverlap builds with, each with one clear message when missing.
# Header-only use of Debian's helpers: nothing here adds a shared library the GPU machines lack.

find_package(nlohmann_json 3.10 QUIET)
if(NOT nlohmann_json_FOUND)
  message(FATAL_ERROR "nlohmann-json not found: install it with `apt-get install nlohmann-json3-dev` (or run scripts/setup.sh)")
endif()
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp)
if(NOT CLI11_INCLUDE_DIR)
  message(FATAL_ERROR "CLI11 not found: install it with `apt-get install libcli11-dev` (or run scripts/setup.sh)")
endif()
find_path(FMT_INCLUDE_DIR fmt/format.h)
if(NOT FMT_INCLUDE_DIR)
  message(FATAL_ERROR "fmt not found: install it with `apt-get install libfmt-dev` (or run scripts/setup.sh)")
endif()
# fmt and CLI11 are used header-only so binaries carry no libfmt.so dependency.
add_library(cco.deps INTERFACE)
target_include_directories(cco.deps SYSTEM INTERFACE ${CLI11_INCLUDE_DIR} ${FMT_INCLUDE_DIR})
target_compile_definitions(cco.deps INTERFACE FMT_HEADER_ONLY=1)
target_link_libraries(cco.deps INTERFACE nlohmann_json::nlohmann_json)

if(CCO_ENABLE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "CUDA Toolkit not found (no nvcc). Install CUDA 12.4+ at /usr/local/cuda, "
                        "or configure with -DCCO_ENABLE_CUDA=OFF for the GPU-free part only.")
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc 13's C++20 dialect flag; tell it.
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_ARCHITECTURES ${CCO_CUDA_ARCHITECTURES})
  find_package(CUDAToolkit 12.4 REQUIRED)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  if(NOT NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "NCCL not found (nccl.h): install NCCL 2.19+ or set NCCL_HOME, "
                        "or configure with -DCCO_ENABLE_CUDA=OFF for the GPU-free part only.")
  endif()
  add_library(cco.nccl INTERFACE)
  target_include_directories(cco.nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
  # Headers only: cco loads libnccl.so.2 (and cuBLASLt) when a command first needs it
  # (src/gpu/runtime/lazy.hpp), so commands that need neither start without them.
  message(STATUS "ccoverlap: CUDA ${CUDAToolkit_VERSION}, NCCL headers ${NCCL_INCLUDE_DIR}, archs ${CMAKE_CUDA_ARCHITECTURES}")
endif()
