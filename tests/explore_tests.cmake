# The plan explorer (lib/explore): policies, presets, gen and sweep. Included by tests/CMakeLists.txt.
add_executable(mlaplan_explore_tests
  # models
  model_test.cpp
  # workloads
  workload_test.cpp
  # policies, batches, sweeps
  compare_cli_test.cpp
  explore_cli_test.cpp
  policy_test.cpp
  sweep_test.cpp
)
target_link_libraries(mlaplan_explore_tests PRIVATE mlaplan mlaplan_fmt nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
target_compile_definitions(mlaplan_explore_tests PRIVATE MLAPLAN_EXE="$<TARGET_FILE:mlaplan_cli>" MLAPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(mlaplan_explore_tests mlaplan_cli)
gtest_discover_tests(mlaplan_explore_tests DISCOVERY_TIMEOUT 60)
