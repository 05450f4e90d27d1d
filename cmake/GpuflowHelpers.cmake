# Warnings as errors on our own targets only (never on generated protobuf code).
function(gpuflow_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  if(GPUFLOW_FUZZ)
    # libFuzzer's coverage instrumentation without its main() (fuzz targets
    # link -fsanitize=fuzzer, tests/fuzz); any UBSan report aborts, so that
    # libFuzzer records it as a crash.
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                                             -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  elseif(GPUFLOW_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# gpuflow_library(NAME SOURCES... DEPS...): a module library with its gpuflow:: alias.
function(gpuflow_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} ${ARG_SRCS})
  string(REGEX REPLACE "^gpuflow_" "" short ${name})
  add_library(gpuflow::${short} ALIAS ${name})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  gpuflow_target_options(${name})
endfunction()

# gpuflow_test(NAME SRCS... DEPS...): a GoogleTest binary registered with CTest.
function(gpuflow_test name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gpuflow_target_options(${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()
