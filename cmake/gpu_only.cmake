# The GPU-only build (-DGOSSAMER_GPU_ONLY=ON), for machines that have the CUDA toolkit, a host
# compiler, CMake and ninja and nothing else (the device machines: no package registry, none of
# the CPU dependencies). It builds the CUDA kernels, the CPU ops they are checked against (with
# kernels/cpu/gemm_loops.cpp in place of the BLAS-backed gemm.cpp, and without cpu_setup.cpp,
# which configures the BLAS libraries), and the gpu tests, with GoogleTest built from the source
# tree given as GOSSAMER_GTEST_SOURCE (scripts/gpu-check.sh --prepare copies it from this
# machine's /usr/src/googletest). Included by CMakeLists.txt, which stops after it.
if(NOT CMAKE_CUDA_COMPILER)
  message(FATAL_ERROR "GOSSAMER_GPU_ONLY=ON needs a CUDA compiler (nvcc on PATH or CUDACXX)")
endif()
find_package(OpenMP REQUIRED COMPONENTS CXX)  # not CUDA: CMake 3.31+ would check it too
find_package(Threads REQUIRED)
if(NOT GOSSAMER_GTEST_SOURCE OR NOT EXISTS ${GOSSAMER_GTEST_SOURCE}/CMakeLists.txt)
  message(FATAL_ERROR "GOSSAMER_GPU_ONLY=ON needs GOSSAMER_GTEST_SOURCE, a GoogleTest source tree "
                      "(scripts/gpu-check.sh --prepare copies one next to the tree)")
endif()
set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
add_subdirectory(${GOSSAMER_GTEST_SOURCE} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)

file(GLOB GOSSAMER_CPU_REFERENCE CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/kernels/cpu/*.cpp)
list(FILTER GOSSAMER_CPU_REFERENCE EXCLUDE REGEX ".*/kernels/cpu/(gemm|cpu_setup)\\.cpp$")
# src/core/buffer.cpp: host memory for kernels/cpu/memory.cpp; src/model: the model the CUDA
# model test runs on both tables (it needs nothing but core and the op table);
# src/optim/sparse_mask.cpp: the CPU top-k the CUDA one is checked against; the zip codec
# (src/comm/zip, less the communicator decorator and the policy) and dtype_size: the CPU codec
# the CUDA one is checked against, and DeviceZipCodec, which drives the CUDA kernels.
file(GLOB GOSSAMER_MODEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/model/*.cpp)
set(GOSSAMER_ZIP_CODEC_SOURCES codec chunk_codec exponent_model crc32c zip_tables device_codec)
list(TRANSFORM GOSSAMER_ZIP_CODEC_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/src/comm/zip/)
list(TRANSFORM GOSSAMER_ZIP_CODEC_SOURCES APPEND .cpp)
add_library(gossamer_gpu_only STATIC ${GOSSAMER_CPU_REFERENCE} ${GOSSAMER_MODEL_SOURCES}
            ${CMAKE_SOURCE_DIR}/src/core/error.cpp ${CMAKE_SOURCE_DIR}/src/core/buffer.cpp
            ${CMAKE_SOURCE_DIR}/src/optim/sparse_mask.cpp ${GOSSAMER_ZIP_CODEC_SOURCES}
            ${CMAKE_SOURCE_DIR}/src/comm/communicator.cpp)
target_include_directories(gossamer_gpu_only PUBLIC ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(gossamer_gpu_only PUBLIC gossamer_flags gossamer_cuda_kernels
                      OpenMP::OpenMP_CXX Threads::Threads)

add_executable(bench_cuda_ops ${CMAKE_SOURCE_DIR}/bench/cuda/bench_cuda_ops.cpp
               ${CMAKE_SOURCE_DIR}/bench/op_bench.cpp)
target_link_libraries(bench_cuda_ops PRIVATE gossamer_gpu_only)
add_executable(bench_cuda_train ${CMAKE_SOURCE_DIR}/bench/cuda/bench_cuda_train.cpp)
target_link_libraries(bench_cuda_train PRIVATE gossamer_gpu_only)

# NCCL, when the machine has it (the CUDA install, or GOSSAMER_NCCL_ROOT: a directory with
# include/nccl.h and lib/libnccl.so*, such as the nvidia-nccl Python package's, searched first and
# alone when given, so that header and library come from one install): bench_nccl, the
# collectives across the machine's GPUs from one process. A changed root searches again.
if(NOT "${GOSSAMER_NCCL_ROOT}" STREQUAL "${GOSSAMER_NCCL_ROOT_USED}")
  unset(NCCL_LIBRARY CACHE)
  unset(NCCL_INCLUDE_DIR CACHE)
  set(GOSSAMER_NCCL_ROOT_USED "${GOSSAMER_NCCL_ROOT}" CACHE INTERNAL "")
endif()
set(nccl_searched "the CUDA install")
if(GOSSAMER_NCCL_ROOT)
  set(nccl_searched "GOSSAMER_NCCL_ROOT '${GOSSAMER_NCCL_ROOT}' only")
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR PATHS ${GOSSAMER_NCCL_ROOT}/lib
               NO_DEFAULT_PATH)
  find_path(NCCL_INCLUDE_DIR nccl.h PATHS ${GOSSAMER_NCCL_ROOT}/include NO_DEFAULT_PATH)
else()
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
               HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
endif()
if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
  message(STATUS "gossamer: NCCL ${NCCL_LIBRARY}, nccl.h in ${NCCL_INCLUDE_DIR}: building bench_nccl")
  add_executable(bench_nccl ${CMAKE_SOURCE_DIR}/bench/cuda/bench_nccl.cpp)
  target_include_directories(bench_nccl PRIVATE ${NCCL_INCLUDE_DIR})
  target_link_libraries(bench_nccl PRIVATE gossamer_gpu_only ${NCCL_LIBRARY})
else()
  message(STATUS "gossamer: no NCCL found (searched ${nccl_searched}): bench_nccl not built")
endif()

enable_testing()
include(${CMAKE_SOURCE_DIR}/cmake/gpu_tests.cmake)
gossamer_add_gpu_tests(gossamer_gpu_only)
