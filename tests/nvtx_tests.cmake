# NVTX ranges (through a recording NVTX tool) and --trace files. Included by tests/CMakeLists.txt.
add_executable(mlaplan_trace_tests trace_file_test.cpp)
target_link_libraries(mlaplan_trace_tests PRIVATE mlaplan nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
target_compile_definitions(mlaplan_trace_tests PRIVATE MLAPLAN_EXE="$<TARGET_FILE:mlaplan_cli>" MLAPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(mlaplan_trace_tests mlaplan_cli)
gtest_discover_tests(mlaplan_trace_tests DISCOVERY_TIMEOUT 60)

if(MLAPLAN_HAVE_NVTX)
  add_library(mlaplan_nvtx_recorder SHARED nvtx_recorder_injection.cpp)
  target_include_directories(mlaplan_nvtx_recorder SYSTEM PRIVATE ${MLAPLAN_NVTX_INCLUDE_DIR})
  add_executable(mlaplan_nvtx_tests nvtx_ranges_test.cpp)
  target_link_libraries(mlaplan_nvtx_tests PRIVATE GTest::gtest GTest::gtest_main)
  target_compile_definitions(mlaplan_nvtx_tests PRIVATE MLAPLAN_EXE="$<TARGET_FILE:mlaplan_cli>"
                             MLAPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}" NVTX_RECORDER="$<TARGET_FILE:mlaplan_nvtx_recorder>")
  add_dependencies(mlaplan_nvtx_tests mlaplan_cli mlaplan_nvtx_recorder)
  gtest_discover_tests(mlaplan_nvtx_tests DISCOVERY_TIMEOUT 60)
else()
  # Without the NVTX headers the ranges are compiled out: say so in the test list rather than pass.
  add_test(NAME NvtxRanges.CompiledOut COMMAND ${CMAKE_COMMAND} -E echo "NVTX3 headers not found: ranges compiled out")
  set_tests_properties(NvtxRanges.CompiledOut PROPERTIES SKIP_REGULAR_EXPRESSION "compiled out")
endif()
