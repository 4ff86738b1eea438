# The gpu tests, for the full CUDA build (tests/CMakeLists.txt) and the GPU-only build
# (gpu_only.cmake): every tests/gpu/test_<name>.cpp is one GoogleTest binary linked to `lib`
# and one ctest entry, label gpu. Without a GPU its tests print SKIPPED and ctest reports the
# entry as skipped (never as passed); a binary whose tests need no GPU never prints SKIPPED and
# passes or fails as any other.
function(gossamer_add_gpu_tests lib)
  file(GLOB GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/test_*.cpp)
  foreach(src ${GPU_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/unit)
    target_compile_options(${name} PRIVATE ${GOSSAMER_TEST_OPT})  # tests/CMakeLists.txt
    target_link_libraries(${name} PRIVATE ${lib} GTest::gtest GTest::gtest_main)
    add_test(NAME gpu.${name} COMMAND ${name})
    set_tests_properties(gpu.${name} PROPERTIES LABELS gpu TIMEOUT 1200
      SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]" ENVIRONMENT "OMP_NUM_THREADS=2")
  endforeach()
endfunction()
