# The layers of gossamer: one folder, one library (docs/ARCHITECTURE.md, "Layers").
#
# gossamer_layer(NAME DIRS dir... [SOURCES file...] [DEPS layer...] [LIBS lib...] [EXECUTABLE exe]
#                [ALONE])
#   The folder(s) DIRS (relative to the source tree; their includes start with NAME/) become
#   the static library gossamer_NAME, or the executable EXE, built from SOURCES (default: every
#   .cpp under DIRS). It links the layers in DEPS, which must be declared before it, and the
#   external LIBS. Its files may include headers of their own layer and of every layer it links,
#   directly or through another layer; nothing else.
#   With GOSSAMER_UNITY=ON (the default) a layer's files compile in batches of 16 (a unity
#   build: the JSON and standard headers are parsed, and their templates compiled, once per
#   batch instead of once per file). ALONE keeps each file its own translation unit: the layers
#   of floating-point code (kernels, model, optim, comm), so that no build mode can change what
#   the compiler inlines into, or contracts within, an op.
# gossamer_layer_check()
#   After the last layer: the `layers` target (part of every build) runs cmake/check_layers.cmake
#   over every file of every layer and fails, naming file, line and layer, on an #include of a
#   layer the file's layer does not link.

function(gossamer_layer name)
  cmake_parse_arguments(L "ALONE" "EXECUTABLE" "DIRS;SOURCES;DEPS;LIBS" ${ARGN})
  if(NOT L_SOURCES)
    foreach(dir ${L_DIRS})
      file(GLOB_RECURSE found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cpp)
      list(APPEND L_SOURCES ${found})
    endforeach()
  endif()
  if(L_EXECUTABLE)
    set(target ${L_EXECUTABLE})
    add_executable(${target} ${L_SOURCES})
    set(scope PRIVATE)
  else()
    set(target gossamer_${name})
    add_library(${target} STATIC ${L_SOURCES})
    set(scope PUBLIC)
  endif()
  target_include_directories(${target} ${scope} ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/src)
  if(GOSSAMER_UNITY AND NOT L_ALONE)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
    # In a batch every .cpp is an included file, so GCC's warning about a main file's
    # anonymous-namespace types used by named ones (meant for headers) misfires.
    target_compile_options(${target} PRIVATE
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>)
  endif()
  set(allowed ${name})
  foreach(dep ${L_DEPS})
    get_property(dep_allowed GLOBAL PROPERTY GOSSAMER_LAYER_ALLOWED_${dep})
    if(NOT dep_allowed)
      message(FATAL_ERROR "layer ${name}: '${dep}' is not a layer declared before it")
    endif()
    list(APPEND allowed ${dep_allowed})
    target_link_libraries(${target} ${scope} gossamer_${dep})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  target_link_libraries(${target} ${scope} gossamer_flags ${L_LIBS})
  set_property(GLOBAL PROPERTY GOSSAMER_LAYER_ALLOWED_${name} ${allowed})
  string(REPLACE ";" "," dirs "${L_DIRS}")
  string(REPLACE ";" "," allowed_list "${allowed}")
  set_property(GLOBAL APPEND PROPERTY GOSSAMER_LAYER_RULES "${name}|${dirs}|${allowed_list}")
  foreach(dir ${L_DIRS})
    file(GLOB_RECURSE files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.h
         ${CMAKE_SOURCE_DIR}/${dir}/*.cpp ${CMAKE_SOURCE_DIR}/${dir}/*.cuh
         ${CMAKE_SOURCE_DIR}/${dir}/*.cu)
    set_property(GLOBAL APPEND PROPERTY GOSSAMER_LAYER_FILES ${files})
  endforeach()
endfunction()

function(gossamer_layer_check)
  get_property(rules GLOBAL PROPERTY GOSSAMER_LAYER_RULES)
  get_property(files GLOBAL PROPERTY GOSSAMER_LAYER_FILES)
  set(rules_file ${CMAKE_BINARY_DIR}/layers.txt)
  string(REPLACE ";" "\n" text "${rules}")
  file(WRITE ${rules_file} "${text}\n")
  set(stamp ${CMAKE_BINARY_DIR}/layers.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DRULES=${rules_file} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
            -P ${CMAKE_SOURCE_DIR}/cmake/check_layers.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${files} ${rules_file} ${CMAKE_SOURCE_DIR}/cmake/check_layers.cmake
    COMMENT "Checking every #include against the layers (cmake/layers.cmake)" VERBATIM)
  add_custom_target(layers ALL DEPENDS ${stamp})
endfunction()
