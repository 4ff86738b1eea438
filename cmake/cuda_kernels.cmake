# The CUDA kernels (kernels/cuda/*.cu) and their op table (kernels/cuda/*.cpp): a library of
# their own, C++17 for nvcc (CMake 3.25 has no C++20 flags for it) and C++20 for the host
# compiler, depending on nothing of gossamer_lib (errors are the header-only gossamer::Error),
# so that the GPU-only build (gpu_only.cmake) uses it as the full build does.
file(GLOB GOSSAMER_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/kernels/cuda/*.cu
     ${CMAKE_SOURCE_DIR}/kernels/cuda/*.cpp)
add_library(gossamer_cuda_kernels STATIC ${GOSSAMER_CUDA_SOURCES})
set_target_properties(gossamer_cuda_kernels PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                      CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON POSITION_INDEPENDENT_CODE ON)
target_include_directories(gossamer_cuda_kernels PUBLIC ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/src)
target_compile_options(gossamer_cuda_kernels PRIVATE
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GOSSAMER_WERROR}>>:--Werror=all-warnings>
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${GOSSAMER_WERROR}>>:-Werror>)
target_link_libraries(gossamer_cuda_kernels PUBLIC CUDA::cudart CUDA::cublasLt)
