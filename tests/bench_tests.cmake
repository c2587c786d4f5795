# mlaplan bench end to end, and the plot script on a saved JSON. Included by tests/CMakeLists.txt.
add_executable(mlaplan_bench_tests bench_cli_test.cpp bench_units_test.cpp)
target_link_libraries(mlaplan_bench_tests PRIVATE mlaplan nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
target_compile_definitions(mlaplan_bench_tests PRIVATE MLAPLAN_EXE="$<TARGET_FILE:mlaplan_cli>" MLAPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(mlaplan_bench_tests mlaplan_cli)
gtest_discover_tests(mlaplan_bench_tests DISCOVERY_TIMEOUT 60)

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  # plot_bench.py exits 77 without matplotlib: reported as skipped, not failed.
  add_test(NAME PlotBench.DrawsThePng
           COMMAND ${CMAKE_COMMAND} -E env ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/bench_plot_check.py
                   ${PROJECT_SOURCE_DIR}/scripts/plot_bench.py ${CMAKE_CURRENT_SOURCE_DIR}/data/bench_sample.json
                   ${CMAKE_CURRENT_BINARY_DIR}/bench_sample.png)
  set_tests_properties(PlotBench.DrawsThePng PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(Python3_Interpreter_FOUND)
  add_test(NAME CompareBench.AgreementWithinTheSpread
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/compare_bench_check.py ${PROJECT_SOURCE_DIR}/scripts/compare_bench.py)
endif()
